"""Promises: a waiting task given the room of an attempt that still runs on a node, to start
there the moment that attempt ends, with no report, commit, pass and order between the two (the
node keeps it: execd/attempts.py). A promise is a start decided a little early, so it is made
only as a start would be: in the planner's order, within every limit a start counts against
(plan.py counts it as started), and only where a start cannot be made now.

Each running attempt may be followed by one promised task, whose CPUs and memory fit in its own:
the task gets its CPU ids and starts when its shepherd is gone. Tasks that need devices, a node
of their own or several nodes are never promised. Of the attempts a task fits behind, the one
that ends first at its limit is taken (then by node name). Pure, and private to plan.py.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable

from drover.scheduler.placement import Need
from drover.scheduler.snapshot import NodeView, Succession


def _soonest(pair: tuple[str, Succession]) -> tuple[float, str, str]:
    """The order successions are offered in: the soonest to end first (then by node and attempt)."""
    node, succession = pair
    return succession.ends_at, node, succession.attempt


class Successions:
    """The attempts of one pass that a task may still be promised to follow, by node."""

    def __init__(self, nodes: Iterable[NodeView]) -> None:
        # A node that goes away (NodeView.ends_at) is promised nothing: when its attempts end
        # is no bound on when it is gone.
        self._open = sorted(((node.name, succession) for node in nodes
                             if node.state.accepts_work and node.ends_at == math.inf
                             for succession in node.successions), key=_soonest)

    def __bool__(self) -> bool:
        return bool(self._open)

    def add(self, node: str, succession: Succession, lasting: bool = True) -> None:
        """A start of this pass, which a task may follow in turn (its slot's next); not on a
        node that goes away (`lasting` False)."""
        if not lasting:
            return
        bisect.insort(self._open, (node, succession), key=_soonest)  # kept in order: no sort each add

    def take(self, need: Need, allowed: frozenset[str] | None) -> tuple[str, Succession] | None:
        """The node and the attempt the task is promised to follow, taken for this pass; None
        where it may follow none."""
        if need.exclusive or need.gres:
            return None
        for at, (node, succession) in enumerate(self._open):
            if allowed is not None and node not in allowed:
                continue
            if need.resources.cpus <= len(succession.cpu_ids) and need.resources.memory_mib <= succession.memory_mib:
                del self._open[at]
                return node, succession
        return None
