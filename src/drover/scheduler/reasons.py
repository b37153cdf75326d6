"""Why a job's pending tasks did not start in a cycle; shown by `drover status` and `drover show`."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class PendingReason(StrEnum):
    RESOURCES = "resources"  # no node has room now
    PRIORITY = "priority"  # jobs ahead of it are waiting for room
    DEPENDENCY = "dependency"  # waits for jobs it depends on
    DEPENDENCY_NEVER_SATISFIED = "dependency_never_satisfied"  # a dependency can never be met
    BEGIN_TIME = "begin_time"  # its begin time has not come
    ARRAY_LIMIT = "array_limit"  # as many tasks run as %N allows
    NO_NODES = "no_nodes"  # no node is up
    TOO_BIG = "too_big"  # no node up is large enough, ever
    RESERVED = "reserved"  # first in line: room is reserved for it when running tasks reach their limits
    NO_NODE_MATCHES = "no_node_matches"  # no node up has the features, devices or queue it asks for
    LICENSES = "licenses"  # not enough of a licence it asks for is free
    QUEUE_STOPPED = "queue_stopped"  # its queue is stopped
    QUEUE_WINDOW = "queue_window"  # its queue's time window is closed
    QUEUE_LIMIT = "queue_limit"  # its queue runs as many tasks as its max_running allows
    USER_LIMIT = "user_limit"  # its owner runs as many tasks in the queue as max_running_per_user allows
    PE_SLOTS = "pe_slots"  # its parallel environment has not enough slots free
    PLANNING_ERROR = "planning_error"  # the controller failed to plan it (its fault): planned again next pass
    # Not the planner's: its tasks were promised the room of running attempts (scheduler/promises.py)
    # and start when those end. Reads show a promised task as waiting, for this reason.
    PROMISED = "promised"

    @property
    def explanation(self) -> str:
        return _EXPLANATIONS[self]


_EXPLANATIONS = {
    PendingReason.RESOURCES: "waiting for CPUs or memory to free up",
    PendingReason.PRIORITY: "waiting behind jobs of higher priority or submitted earlier",
    PendingReason.DEPENDENCY: "waiting for the jobs it depends on to complete",
    PendingReason.DEPENDENCY_NEVER_SATISFIED: "a dependency can never be met; it will not run",
    PendingReason.BEGIN_TIME: "waiting for its begin time",
    PendingReason.ARRAY_LIMIT: "as many of its tasks are running as its %limit allows",
    PendingReason.NO_NODES: "no node is up",
    PendingReason.TOO_BIG: "no node that is up has that many CPUs or that much memory",
    PendingReason.RESERVED: "first in line: it starts when running jobs reach their time limits, if not sooner",
    PendingReason.NO_NODE_MATCHES: "no node that is up has the features, devices or queue it asks for",
    PendingReason.LICENSES: "waiting for licences to be given back",
    PendingReason.QUEUE_STOPPED: "its queue is stopped: no job of it starts until an operator starts it",
    PendingReason.QUEUE_WINDOW: "its queue starts jobs only in its time window",
    PendingReason.QUEUE_LIMIT: "its queue runs as many tasks as it allows at once",
    PendingReason.USER_LIMIT: "its owner runs as many tasks in its queue as it allows one user",
    PendingReason.PE_SLOTS: "waiting for slots of its parallel environment to be given back",
    PendingReason.PLANNING_ERROR: "the controller could not plan it (its log says why); it stays pending and is "
                                  "planned again",
    PendingReason.PROMISED: "promised the room of a running job on its node: it starts the moment that job ends",
}


@dataclass(frozen=True, slots=True)
class Waiting:
    """A reason with what exactly the job waits for ("waiting for job 12 (afterok) to complete")."""

    reason: PendingReason
    detail: str = ""

    @property
    def value(self) -> str:
        return self.reason.value

    @property
    def explanation(self) -> str:
        return self.detail or self.reason.explanation
