"""Why a task's attempt is frozen: its reasons to be suspended. Pure; standard library only.

Grid Engine keeps two independent suspensions of a job: `s`, the job's own (qmod -sj, `drover
suspend`), and `S`, its queue instance's (qmod -sq, `drover queue suspend`). A job is frozen
while either holds, and thawed only when neither does: unsuspending the queue leaves a job
suspended on its own frozen, and resuming the job on its own leaves it frozen while its queue
instance is suspended.

A task keeps the set of its reasons; each request adds or removes one and says whether the
attempt must now be frozen (the set was empty) or thawed (the set became empty). The task's
state (RUNNING, SUSPENDED) follows the node's reports of what it did; the set says what is
wanted, and is kept in the store so a restarted controller still knows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class SuspendReason(StrEnum):
    JOB = "job"  # the job's own: drover suspend, qmod -sj (Grid Engine's `s`)
    QUEUE = "queue"  # its queue instance's: drover queue suspend, qmod -sq (Grid Engine's `S`)


Reasons = frozenset[SuspendReason]
NONE: Reasons = frozenset()


@dataclass(frozen=True, slots=True)
class Move:
    """The reasons after a request, and the order it takes: "suspend", "resume" or None (the
    attempt is already as wanted)."""

    reasons: Reasons
    order: str | None


def suspend(reasons: Reasons, reason: SuspendReason) -> Move:
    """Add `reason`: the attempt is frozen if nothing froze it before."""
    return Move(reasons | {reason}, None if reasons else "suspend")


def resume(reasons: Reasons, reason: SuspendReason) -> Move:
    """Take `reason` away: the attempt is thawed if nothing else keeps it frozen."""
    if reason not in reasons:
        return Move(reasons, None)
    rest = reasons - {reason}
    return Move(rest, None if rest else "resume")


def parse(text: str | None) -> Reasons:
    """The reasons as the store keeps them: a comma list ("job,queue"); None or "": none."""
    return frozenset(SuspendReason(word) for word in (text or "").split(",") if word)


def text(reasons: Reasons) -> str | None:
    return ",".join(sorted(reasons)) or None


def ge_letters(reasons: Reasons) -> str:
    """Grid Engine's qstat letters: `s` for the job's own suspension, `S` for its queue's."""
    return ("s" if SuspendReason.JOB in reasons else "") + ("S" if SuspendReason.QUEUE in reasons else "")
