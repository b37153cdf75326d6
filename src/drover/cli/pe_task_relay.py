"""Following a task of a running parallel job started on one of its hosts (`drover task start`,
`qrsh -inherit`, srun's tasks on the job's other hosts): its stdout and stderr copied to the
caller's as the controller gets them, until the task has ended and all of its output is
copied."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import PeTaskInfo

POLL_S = (0.02, 1.0)  # a task's state and output are looked at this often, slower as it runs on
STREAMS = ("stdout", "stderr")
AWAY_S = 120.0  # how long a controller that does not answer is waited for (a restart, a failover)


@dataclass
class TaskRelay:
    job_id: int
    index: int  # the job's task (array index) the parallel task belongs to
    petask: str
    write: dict[str, Callable[[bytes], None]]  # "stdout"/"stderr" → where its output goes
    offsets: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STREAMS, 0))
    away_since: float | None = None  # when the controller stopped answering, while it does not
    missing_since: float | None = None  # when its node said it does not have the task, while it does

    def look(self, api: Client) -> PeTaskInfo | None:
        """Copy what the task wrote since the last look; its record once it has ended and all
        of its output is copied, else None. A controller that cannot be reached is looked for
        again at the next look, for up to AWAY_S: one that restarts knows the task still (its
        tasks are in its store), and the task runs on meanwhile."""
        from drover.core.errors import Unavailable

        try:
            return self._look(api)
        except Unavailable:
            now = time.monotonic()
            self.away_since = self.away_since or now
            if now - self.away_since > AWAY_S:
                raise
            return None

    def _look(self, api: Client) -> PeTaskInfo | None:
        from drover.core.errors import NotFound

        info = api.pe_task(self.job_id, self.petask, task=self.index)
        self.away_since = None
        try:
            self._copy_output(api)
        except NotFound:
            # Its node does not have it, or could not read its output. Where the task never
            # started there (its node refused it, or never got its order), its record says so
            # once the controller has its end, failed, with why: there is no output to copy.
            # Where it ran, its output not copied is an error, as before. A node that goes on
            # answering so of a task that runs by its record is believed after AWAY_S.
            info = api.pe_task(self.job_id, self.petask, task=self.index)
            if info.ended_at is not None:
                if info.failure is None:
                    raise
                return info
            now = time.monotonic()
            self.missing_since = self.missing_since or now
            if now - self.missing_since > AWAY_S:
                raise
            return None
        self.missing_since = None
        return info if info.ended_at is not None else None

    def _copy_output(self, api: Client) -> None:
        for stream in STREAMS:
            while True:
                chunk = api.pe_task_output(self.job_id, self.petask, stream, self.offsets[stream], task=self.index)
                if not chunk.data:
                    break
                self.write[stream](chunk.data)
                self.offsets[stream] += len(chunk.data)

    def stop(self, api: Client) -> None:
        api.stop_pe_task(self.job_id, self.petask, task=self.index)


def next_delay(delay: float) -> float:
    return min(delay * 1.5, POLL_S[1])
