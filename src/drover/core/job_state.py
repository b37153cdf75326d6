"""Every legal change of a task's state, in one table. Pure; standard library only.

The diagram in DESIGN.md is the authority; this table is its executable form. A task's state is
written only through `next_state()`. A request that does not change state by itself (cancelling a
running task) is recorded on the task and acted on by the controller; the state moves when the
matching report arrives.
"""

from __future__ import annotations

from enum import StrEnum

from drover.core.errors import Conflict


class JobState(StrEnum):
    PENDING = "pending"
    HELD = "held"
    DISPATCHED = "dispatched"  # an attempt was sent to a node; its shepherd has not started the job yet
    RUNNING = "running"
    SUSPENDED = "suspended"
    COMPLETING = "completing"  # the job exited; the node's cleanup has not reported yet
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    OUT_OF_MEMORY = "out_of_memory"
    NODE_FAIL = "node_fail"

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATES

    @property
    def is_active(self) -> bool:
        """Holds resources on a node."""
        return self in ACTIVE_STATES


FINAL_STATES = frozenset(
    {
        JobState.COMPLETED,
        JobState.FAILED,
        JobState.CANCELLED,
        JobState.TIMEOUT,
        JobState.OUT_OF_MEMORY,
        JobState.NODE_FAIL,
    }
)
ACTIVE_STATES = frozenset(
    {JobState.DISPATCHED, JobState.RUNNING, JobState.SUSPENDED, JobState.COMPLETING}
)


class Trigger(StrEnum):
    """Why a state changed. Stored in the event log beside the new state."""

    HOLD = "hold"  # a user's hold: of a waiting task, or of one stopped before its job started
    RELEASE = "release"
    DISPATCH = "dispatch"
    START = "start"
    SUSPEND = "suspend"
    RESUME = "resume"
    EXIT = "exit"
    REQUEUE = "requeue"  # exit 99, prolog failure, node lost with requeue allowed
    ERROR_HOLD = "error_hold"  # exit 100, a failure to start
    SUCCEED = "succeed"
    FAIL = "fail"
    TIME_OUT = "time_out"
    RUN_OUT_OF_MEMORY = "run_out_of_memory"
    CANCEL = "cancel"
    LOSE_NODE = "lose_node"
    # The controller could not handle the job (an exception in its own code, or data the store
    # refuses): the job fails as a whole, with the reason, so that nothing else is held up.
    INTERNAL_ERROR = "internal_error"


S, T = JobState, Trigger
_RULES: tuple[tuple[frozenset[JobState], Trigger, JobState], ...] = (
    # from                                                trigger               to
    (frozenset({S.PENDING}),                              T.HOLD,               S.HELD),
    (frozenset({S.HELD}),                                 T.RELEASE,            S.PENDING),
    (frozenset({S.PENDING}),                              T.DISPATCH,           S.DISPATCHED),
    (frozenset({S.DISPATCHED}),                           T.START,              S.RUNNING),
    (frozenset({S.RUNNING}),                              T.SUSPEND,            S.SUSPENDED),
    (frozenset({S.SUSPENDED}),                            T.RESUME,             S.RUNNING),
    (frozenset({S.DISPATCHED, S.RUNNING, S.SUSPENDED}),   T.EXIT,               S.COMPLETING),
    (frozenset({S.COMPLETING}),                           T.REQUEUE,            S.PENDING),
    (frozenset({S.COMPLETING}),                           T.ERROR_HOLD,         S.HELD),
    (frozenset({S.COMPLETING}),                           T.HOLD,               S.HELD),
    (frozenset({S.COMPLETING}),                           T.SUCCEED,            S.COMPLETED),
    (frozenset({S.COMPLETING}),                           T.FAIL,               S.FAILED),
    (frozenset({S.COMPLETING}),                           T.TIME_OUT,           S.TIMEOUT),
    (frozenset({S.COMPLETING}),                           T.RUN_OUT_OF_MEMORY,  S.OUT_OF_MEMORY),
    (frozenset({S.COMPLETING, S.PENDING, S.HELD}),        T.CANCEL,             S.CANCELLED),
    (frozenset({S.DISPATCHED, S.RUNNING, S.SUSPENDED,
                S.COMPLETING}),                           T.LOSE_NODE,          S.NODE_FAIL),
    (frozenset({S.PENDING, S.HELD, S.DISPATCHED,
                S.RUNNING, S.SUSPENDED, S.COMPLETING}),   T.INTERNAL_ERROR,     S.FAILED),
)  # fmt: skip
del S, T

TRANSITIONS: dict[tuple[JobState, Trigger], JobState] = {
    (source, trigger): target for sources, trigger, target in _RULES for source in sources
}


class IllegalTransition(Conflict):
    def __init__(self, state: JobState, trigger: Trigger) -> None:
        allowed = sorted(t.value for (s, t) in TRANSITIONS if s is state)
        super().__init__(
            f"a {state.value} task cannot {trigger.value}; "
            f"allowed: {', '.join(allowed) or 'nothing (final state)'}"
        )
        self.state, self.trigger = state, trigger


def next_state(state: JobState, trigger: Trigger) -> JobState:
    try:
        return TRANSITIONS[state, trigger]
    except KeyError:
        raise IllegalTransition(state, trigger) from None


def can(state: JobState, trigger: Trigger) -> bool:
    return (state, trigger) in TRANSITIONS
