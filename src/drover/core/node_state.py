"""A node's states and their legal changes, in one table. Pure."""

from __future__ import annotations

from enum import StrEnum

from drover.core.errors import Conflict


class NodeState(StrEnum):
    UP = "up"  # connected, takes work
    DOWN = "down"  # not connected
    DRAINING = "draining"  # connected, takes no new work, jobs still running
    DRAINED = "drained"  # connected, takes no new work, idle
    ERROR = "error"  # the node could not prepare an attempt; takes no work until cleared

    @property
    def accepts_work(self) -> bool:
        return self is NodeState.UP


class NodeTrigger(StrEnum):
    CONNECT = "connect"
    DISCONNECT = "disconnect"
    DRAIN = "drain"
    IDLE = "idle"
    RESUME = "resume"
    FAIL = "fail"


N, NT = NodeState, NodeTrigger
_RULES: tuple[tuple[frozenset[NodeState], NodeTrigger, NodeState], ...] = (
    (frozenset({N.DOWN}),                                   NT.CONNECT,     N.UP),
    (frozenset({N.UP, N.DRAINING, N.DRAINED, N.ERROR}),     NT.DISCONNECT,  N.DOWN),
    (frozenset({N.UP}),                                     NT.DRAIN,       N.DRAINING),
    (frozenset({N.DRAINING}),                               NT.IDLE,        N.DRAINED),
    (frozenset({N.DRAINING, N.DRAINED, N.ERROR}),           NT.RESUME,      N.UP),
    (frozenset({N.UP, N.DRAINING, N.DRAINED}),              NT.FAIL,        N.ERROR),
)  # fmt: skip
del N, NT

NODE_TRANSITIONS: dict[tuple[NodeState, NodeTrigger], NodeState] = {
    (source, trigger): target for sources, trigger, target in _RULES for source in sources
}


def next_node_state(state: NodeState, trigger: NodeTrigger) -> NodeState:
    try:
        return NODE_TRANSITIONS[state, trigger]
    except KeyError:
        allowed = sorted(t.value for (s, t) in NODE_TRANSITIONS if s is state)
        raise Conflict(
            f"a {state.value} node cannot {trigger.value}; allowed: {', '.join(allowed)}"
        ) from None
