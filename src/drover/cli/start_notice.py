"""What a command attached to a job (`drover run`, srun, salloc, qrsh) says on stderr while the
job waits to start, and once it starts, as srun does: "srun: job 12 queued and waiting for
resources", then "srun: job 12 has been allocated resources".

The queued line comes only when the job has not started PATIENCE_S after it was submitted. On a
node with room the controller plans and dispatches a job within a few tens of milliseconds (the
next pass of its loop; 13 ms median, 30 ms at most, on a busy two-core machine), so a job that
need not wait says nothing of waiting, as srun says nothing then; half a second is still short
enough that someone whose job does wait is told at once, and why. The reason is the NOTE `drover status` shows (cli/why.status_note): the controller's
planner's own words for it, the first line of what `drover why` says.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from drover.protocol.plain import WaitReply

PATIENCE_S = 0.5


@dataclass(frozen=True, slots=True)
class Wording:
    """The lines: `queued` with {id} and {reason}, `started` with {id} and {nodes} ("node vm")."""

    queued: str
    started: str
    always_started: bool = False  # said also when the job never was said to wait


DROVER = Wording("drover: job {id} queued and waiting for resources ({reason})",
                 "drover: job {id} started on {nodes}", always_started=True)


def slurm(command: str) -> Wording:
    """srun's words, and salloc's (which says first that its allocation is pending)."""
    queued = f"{command}: job {{id}} queued and waiting for resources"
    if command == "salloc":
        queued = f"salloc: Pending job allocation {{id}}\n{queued}"
    return Wording(queued, f"{command}: job {{id}} has been allocated resources")


class StartNotice:
    """Shown each wait reply of one job (see()), it says the lines above at their moment, once."""

    def __init__(self, wording: Wording | None, job_id: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.wording, self.job_id, self.clock = wording, job_id, clock
        self.since = clock()
        self.queued_said = False
        self.over = wording is None  # nothing more to say

    def see(self, reply: WaitReply) -> None:
        if self.over or self.wording is None:
            return
        nodes = _nodes(reply)
        if nodes or reply["ended"]:
            self.over = True
            if nodes and (self.queued_said or self.wording.always_started):
                where = ("node " if len(nodes) == 1 else "nodes ") + ", ".join(nodes)
                _say(self.wording.started.format(id=self.job_id, nodes=where))
        elif not self.queued_said and not _started(reply) and self.clock() - self.since >= PATIENCE_S:
            self.queued_said = True
            _say(self.wording.queued.format(id=self.job_id, reason=_reason(reply)))


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _started(reply: WaitReply) -> bool:
    return any(task["state"] not in ("pending", "held") for task in reply["job"]["tasks"])


def _nodes(reply: WaitReply) -> list[str]:
    """The nodes its started tasks' latest attempts were given, in order of first mention: not
    those of a task that waits (a promised one's attempt waits on its node for another to end)."""
    found: dict[str, None] = {}
    for task in reply["job"]["tasks"]:
        if task["state"] not in ("pending", "held") and task["attempts"] and task["attempts"][-1]["node"]:
            found[task["attempts"][-1]["node"]] = None
    return list(found)


def _reason(reply: WaitReply) -> str:
    import msgspec

    from drover.cli.why import status_note
    from drover.protocol.api import JobInfo

    return status_note(msgspec.convert(reply["job"], JobInfo)) or "pending"
