"""Decide which pending tasks start where. Pure: no I/O, no clock reads, no globals.

Contract:
- The same input gives the same `Plan`; inputs are never mutated; `now` is passed in.
- Order is priority (higher first), then submission time, then job id, then task index.
- Order is strict: when the next task of a job cannot be placed for lack of room, no job after
  it starts in this cycle (it would take the room the earlier job is waiting for). Jobs that
  cannot start for other reasons (dependencies, their array limit, too big for any node) do not
  block the jobs behind them.
- A node is never over-committed, and only nodes that accept work get tasks.
- Every job with pending tasks that it does not start completely gets a `PendingReason`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from drover.core.resources import Resources
from drover.scheduler.reasons import PendingReason
from drover.scheduler.snapshot import NodeView, PendingWork


@dataclass(frozen=True, slots=True)
class Start:
    job: int
    index: int
    node: str
    cpu_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Plan:
    starts: tuple[Start, ...] = ()
    pending_reasons: Mapping[int, PendingReason] = field(default_factory=dict)


@dataclass(slots=True)
class _Room:
    """A node's free room during one cycle (the planner's own scratch copy)."""

    name: str
    free: Resources
    free_cpu_ids: list[int]


def order_key(work: PendingWork) -> tuple[int, float, int]:
    return (-work.priority, work.submitted_at, work.job)


def plan(work: Sequence[PendingWork], nodes: Sequence[NodeView], now: float) -> Plan:
    del now  # the first planner has no time-based policy; later ones (ageing, backfill) use it
    rooms = [
        _Room(node.name, node.free, sorted(node.free_cpu_ids))
        for node in sorted(nodes, key=lambda node: node.name)
        if node.state.accepts_work
    ]
    largest = [node.total for node in nodes if node.state.accepts_work]
    starts: list[Start] = []
    reasons: dict[int, PendingReason] = {}
    blocked = False
    for item in sorted(work, key=order_key):
        if item.pending.count == 0:
            continue
        if item.dependencies_failed:
            reasons[item.job] = PendingReason.DEPENDENCY_NEVER_SATISFIED
            continue
        if not item.dependencies_met:
            reasons[item.job] = PendingReason.DEPENDENCY
            continue
        if not rooms:
            reasons[item.job] = PendingReason.NO_NODES
            continue
        if not any(item.resources.fits_in(total) for total in largest):
            reasons[item.job] = PendingReason.TOO_BIG
            continue
        if blocked:
            reasons[item.job] = PendingReason.PRIORITY
            continue
        allowed = item.pending.count
        if item.max_running is not None:
            allowed = min(allowed, max(item.max_running - item.running_count, 0))
        started = 0
        for index in item.pending.first(allowed):
            room = _place(item.resources, rooms)
            if room is None:
                reasons[item.job] = PendingReason.RESOURCES
                blocked = True
                break
            cpu_ids = tuple(room.free_cpu_ids[: item.resources.cpus])
            del room.free_cpu_ids[: item.resources.cpus]
            room.free = room.free - item.resources
            starts.append(Start(item.job, index, room.name, cpu_ids))
            started += 1
        else:
            if started < item.pending.count:
                reasons[item.job] = PendingReason.ARRAY_LIMIT
    return Plan(tuple(starts), reasons)


def _place(need: Resources, rooms: list[_Room]) -> _Room | None:
    """First fit, nodes in name order."""
    for room in rooms:
        if need.fits_in(room.free) and len(room.free_cpu_ids) >= need.cpus:
            return room
    return None
