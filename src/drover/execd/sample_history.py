"""One attempt's samples on its node: jobd's LIFO buffers of short and long samples.

Two bounded rings: the last SHORT samples as taken, and a long one of every LONG_EVERY-th sample
(at most LONG samples), so that with a sample every 10 s the node holds the last ten minutes in
detail and the last ten hours coarsely, in memory that does not grow however long the job runs.
Peak and averages are kept beside them, over every sample, not only those the rings still hold.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from drover.protocol.node_channel import Sample

SHORT = 60
LONG = 360
LONG_EVERY = 10


@dataclass(slots=True)
class SampleHistory:
    short: deque[Sample] = field(default_factory=lambda: deque(maxlen=SHORT))
    long: deque[Sample] = field(default_factory=lambda: deque(maxlen=LONG))
    taken: int = 0
    peak_bytes: int = 0
    memory_sum: int = 0
    cpu_sum: float = 0.0

    def add(self, sample: Sample) -> None:
        if self.taken % LONG_EVERY == 0:
            self.long.append(sample)  # the first sample, then every LONG_EVERY-th
        self.short.append(sample)
        self.taken += 1
        self.peak_bytes = max(self.peak_bytes, sample.peak_bytes, sample.memory_bytes)
        self.memory_sum += sample.memory_bytes
        self.cpu_sum += sample.cpu

    @property
    def latest(self) -> Sample | None:
        return self.short[-1] if self.short else None

    @property
    def memory_average_bytes(self) -> int:
        return self.memory_sum // self.taken if self.taken else 0

    @property
    def cpu_average(self) -> float:
        """The mean of the samples' CPU; the node reports the exact figure (CPU time over run
        time) where it can read it."""
        return self.cpu_sum / self.taken if self.taken else 0.0
