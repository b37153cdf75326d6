"""Decide which pending tasks start where. Pure: no I/O, no clock reads, no globals.

Contract:
- The same input gives the same `Plan`; inputs are never mutated; `now` is passed in.
- Order is priority (higher first), then submission time, then job id, then task index.
- Order is strict: when the next task of a job cannot be placed for lack of room, no job after
  it starts in this cycle (it would take the room the earlier job is waiting for). Jobs that
  cannot start for other reasons (dependencies, their array limit, too big for any node) do not
  block the jobs behind them.
- A node is never over-committed, and only nodes that accept work get tasks.
- Every job with pending tasks that it does not start completely gets a `PendingReason`, and
  `details` says what exactly it waits for when there is more to say (which jobs, what time).
- No task starts before its job's `begin_at` or while its dependencies are not met; of the
  singleton jobs of one owner and name, at most one starts in a pass, and none if another job
  of that name started in it. `wake_at` is the earliest begin time still to come: the
  controller plans again then.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

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
    details: Mapping[int, str] = field(default_factory=dict)  # job → what it waits for, in words
    wake_at: float | None = None  # the earliest begin time after `now` of a job that waits for it


@dataclass(slots=True)
class _Room:
    """A node's free room during one cycle (the planner's own scratch copy)."""

    name: str
    free: Resources
    free_cpu_ids: list[int]


def order_key(work: PendingWork) -> tuple[int, float, int]:
    return (-work.priority, work.submitted_at, work.job)


def plan(work: Sequence[PendingWork], nodes: Sequence[NodeView], now: float) -> Plan:
    rooms = [
        _Room(node.name, node.free, sorted(node.free_cpu_ids))
        for node in sorted(nodes, key=lambda node: node.name)
        if node.state.accepts_work
    ]
    largest = [node.total for node in nodes if node.state.accepts_work]
    starts: list[Start] = []
    reasons: dict[int, PendingReason] = {}
    details: dict[int, str] = {}
    wake_at: float | None = None
    started_names: set[tuple[str, str]] = set()  # owner and name of the jobs started in this pass
    blocked = False
    for item in sorted(work, key=order_key):
        if item.pending.count == 0:
            continue
        if item.dependencies_failed or not item.dependencies_met:
            never = item.dependencies_failed
            reasons[item.job] = PendingReason.DEPENDENCY_NEVER_SATISFIED if never else PendingReason.DEPENDENCY
            if item.waiting_for:
                details[item.job] = item.waiting_for
            continue
        if item.begin_at is not None and item.begin_at > now:
            reasons[item.job] = PendingReason.BEGIN_TIME
            details[item.job] = "waiting for its begin time, " + _local_time(item.begin_at)
            wake_at = item.begin_at if wake_at is None else min(wake_at, item.begin_at)
            continue
        if item.singleton and (item.owner, item.name) in started_names:
            reasons[item.job] = PendingReason.DEPENDENCY
            details[item.job] = "waiting for the job of the same name (singleton) started now to end"
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
        indices = item.pending.first(allowed + len(item.blocked))
        for index in [index for index in indices if index not in item.blocked][:allowed]:
            room = _place(item.resources, rooms)
            if room is None:
                reasons[item.job] = PendingReason.RESOURCES
                blocked = True
                break
            cpu_ids = tuple(room.free_cpu_ids[: item.resources.cpus])
            del room.free_cpu_ids[: item.resources.cpus]
            room.free = room.free - item.resources
            starts.append(Start(item.job, index, room.name, cpu_ids))
            started_names.add((item.owner, item.name))
            started += 1
        else:
            if started < item.pending.count and item.blocked and started < allowed:
                reasons[item.job] = PendingReason.DEPENDENCY  # the tasks left wait for their own
                if item.waiting_for:
                    details[item.job] = item.waiting_for
            elif started < item.pending.count:
                reasons[item.job] = PendingReason.ARRAY_LIMIT
    return Plan(tuple(starts), reasons, details, wake_at)


def _local_time(moment: float) -> str:
    return datetime.fromtimestamp(moment).strftime("%Y-%m-%d %H:%M:%S")


def _place(need: Resources, rooms: list[_Room]) -> _Room | None:
    """First fit, nodes in name order."""
    for room in rooms:
        if need.fits_in(room.free) and len(room.free_cpu_ids) >= need.cpus:
            return room
    return None
