"""What the running attempts use now, as their nodes sample it: in memory only, never stored.

Each node sends the latest sample of every attempt it runs in one message per round; an attempt
of that node missing from the next message, or one that reports its exit, is forgotten, and so
is every attempt of a node whose channel closes. The short history feeds `drover show`'s
sparklines; the accounting of what an attempt used stays its exit report's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from drover.core.ids import job_of_attempt
from drover.protocol.node_channel import Exited, Exiting, NodeMessage, Sample, Samples

K = TypeVar("K")
HISTORY = 60  # samples kept per attempt: ten minutes at the default sample_s


@dataclass(slots=True)
class AttemptSamples:
    node: str
    latest: Sample
    history: deque[Sample] = field(default_factory=lambda: deque(maxlen=HISTORY))

    @property
    def peak_bytes(self) -> int:
        return self.latest.peak_bytes  # the node's figure: over every sample, and the cgroup's own peak


class LiveSamples:
    def __init__(self, sent_to: Callable[[str], str | None] | None = None) -> None:
        """`sent_to`: the node an attempt (by its name) was sent to, None for one not running
        (handlers/attempt_nodes.sent_to). A node speaks for its own attempts only: its samples
        and exit reports of any other are passed over, as the controller passes over its other
        reports of them (attempt_nodes.ran_on). None: every node is taken at its word."""
        self._sent_to = sent_to
        self._attempts: dict[str, AttemptSamples] = {}
        self._of_node: dict[str, set[str]] = {}
        self._of_job: dict[int, set[str]] = {}

    def take(self, node: str, messages: Iterable[NodeMessage]) -> None:
        """A frame from `node`: its samples, and the exits that end what they describe."""
        for message in messages:
            if isinstance(message, Samples):
                self._take_round(node, message.samples)
            elif isinstance(message, Exiting | Exited) and self._its_own(node, message.attempt):
                self.forget(message.attempt)

    def _its_own(self, node: str, attempt: str) -> bool:
        return self._sent_to is None or self._sent_to(attempt) == node

    def _take_round(self, node: str, samples: list[Sample]) -> None:
        current = {sample.attempt for sample in samples}
        for name in self._of_node.get(node, set()) - current:
            self.forget(name)
        for sample in samples:
            job_id = job_of_attempt(sample.attempt)
            if job_id is None or not self._its_own(node, sample.attempt):
                continue  # not an attempt's name (a node's mistake), or another node's attempt
            entry = self._attempts.get(sample.attempt)
            if entry is None or entry.node != node:
                entry = self._attempts[sample.attempt] = AttemptSamples(node, sample)
                self._of_node.setdefault(node, set()).add(sample.attempt)
                self._of_job.setdefault(job_id, set()).add(sample.attempt)
            entry.latest = sample
            entry.history.append(sample)

    def forget(self, attempt: str) -> None:
        entry = self._attempts.pop(attempt, None)
        if entry is None:
            return
        _discard(self._of_node, entry.node, attempt)
        job_id = job_of_attempt(attempt)
        if job_id is not None:
            _discard(self._of_job, job_id, attempt)

    def node_gone(self, node: str) -> None:
        for attempt in list(self._of_node.get(node, ())):
            self.forget(attempt)

    def of_job(self, job_id: int) -> list[tuple[str, AttemptSamples]]:
        return sorted((name, self._attempts[name]) for name in self._of_job.get(job_id, ()))

    def __iter__(self) -> Iterator[tuple[str, AttemptSamples]]:
        return iter(list(self._attempts.items()))

    def __len__(self) -> int:
        return len(self._attempts)



def _discard(index: dict[K, set[str]], key: K, attempt: str) -> None:
    names = index.get(key)
    if names is not None:
        names.discard(attempt)
        if not names:
            del index[key]  # no empty sets left behind by attempts that came and went
