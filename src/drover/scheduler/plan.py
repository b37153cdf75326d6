"""Decide which pending tasks start where. Pure: no I/O, no clock reads, no globals.

Contract:
- The same input gives the same `Plan`; inputs are never mutated; `now` is passed in.
- Order is priority (higher first; the multifactor total of `priority.py`, which by default is
  the job's own priority), then submission time, then job id, then task index.
- EASY backfill: the first job whose next task cannot be placed for lack of room gets a
  reservation, the earliest time some node will have room for that task, found from the
  running tasks' ends (their start plus their run limit, `NodeView.releases`; a task without a
  limit never ends). It waits with PendingReason.RESERVED ("starts by <time> on <node>"). A
  later task starts now only where it fits now and either ends by the reservation's start (its
  own `run_limit_s`) or leaves the reserved node the room the reserved task needs then. Only
  one reservation is made a pass.
- When no reservation can be made (some task on every node that could hold it has no limit),
  or backfill is off, order is strict: no job after the blocked one starts in this cycle (it
  would take the room the earlier job is waiting for). Jobs that cannot start for other
  reasons (dependencies, their array limit, too big for any node) never block the jobs behind
  them.
- A node is never over-committed, and only nodes that accept work get tasks.
- Every job with pending tasks that it does not start completely gets a `PendingReason`, and
  `details` says what exactly it waits for when there is more to say (which jobs, what time).
- No task starts before its job's `begin_at` or while its dependencies are not met; of the
  singleton jobs of one owner and name, at most one starts in a pass, and none if another job
  of that name started in it. `wake_at` is the earliest begin time still to come: the
  controller plans again then.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from drover.core.resources import Resources
from drover.scheduler.priority import DEFAULT_POLICY, Policy, Weigher
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
    reservation: Reservation | None = None  # the first blocked job's, when backfill could make one
    backfilled: tuple[int, ...] = ()  # jobs that started ahead of the reserved one, in start order


@dataclass(frozen=True, slots=True)
class Reservation:
    job: int
    node: str
    at: float  # the time its next task can start there at the latest
    resources: Resources


@dataclass(slots=True)
class _Room:
    """A node's free room during one cycle (the planner's own scratch copy)."""

    name: str
    free: Resources
    free_cpu_ids: list[int]
    total: Resources
    releases: list[tuple[float, Resources]]  # when what its tasks hold comes back (inf: never)


def order_key(work: PendingWork) -> tuple[int, float, int]:
    return (-work.priority, work.submitted_at, work.job)


def ordered(work: Sequence[PendingWork], now: float, policy: Policy = DEFAULT_POLICY) -> list[PendingWork]:
    """The work in the planner's order: multifactor priority, then submission time and job id."""
    if policy.weights.plain:
        return sorted(work, key=order_key)
    weigher = Weigher(policy, {item.owner for item in work}, now)
    return sorted(work, key=lambda item: (
        -weigher.factors(item.owner, item.priority, item.queue_priority, item.submitted_at).total,
        item.submitted_at, item.job))


def plan(work: Sequence[PendingWork], nodes: Sequence[NodeView], now: float,
         policy: Policy = DEFAULT_POLICY) -> Plan:
    rooms = [
        _Room(node.name, node.free, sorted(node.free_cpu_ids), node.total, list(node.releases))
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
    reservation: Reservation | None = None
    spare: Resources | None = None  # what the reserved node has at the reservation beyond its need
    backfilled: list[int] = []
    for item in ordered(work, now, policy):
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
        ends = now + item.run_limit_s if item.run_limit_s is not None else math.inf
        for index in [index for index in indices if index not in item.blocked][:allowed]:
            if reservation is None:
                room = _place(item.resources, rooms)
            else:
                room = _place(item.resources, rooms, reservation, ends, spare)
            if room is None:
                if reservation is not None:
                    fits = _place(item.resources, rooms) is not None
                    reasons[item.job] = PendingReason.PRIORITY if fits else PendingReason.RESOURCES
                    if fits:
                        details[item.job] = (f"would delay job {reservation.job}, reserved to start by "
                                             f"{_local_time(reservation.at)} on {reservation.node}")
                    break
                found = _reserve(item.job, item.resources, rooms, now) if policy.backfill else None
                if found is None:
                    reasons[item.job] = PendingReason.RESOURCES
                    blocked = True
                else:
                    reservation, spare = found
                    reasons[item.job] = PendingReason.RESERVED
                    details[item.job] = f"reserved: starts by {_local_time(reservation.at)} on {reservation.node}"
                break
            if reservation is not None:
                if room.name == reservation.node and ends > reservation.at:
                    assert spare is not None
                    spare = spare - item.resources
                if not backfilled or backfilled[-1] != item.job:
                    backfilled.append(item.job)
            cpu_ids = tuple(room.free_cpu_ids[: item.resources.cpus])
            del room.free_cpu_ids[: item.resources.cpus]
            room.free = room.free - item.resources
            room.releases.append((ends, item.resources))
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
    return Plan(tuple(starts), reasons, details, wake_at, reservation, tuple(backfilled))


def _local_time(moment: float) -> str:
    return datetime.fromtimestamp(moment).strftime("%Y-%m-%d %H:%M:%S")


def _place(need: Resources, rooms: list[_Room], reservation: Reservation | None = None, ends: float = 0.0,
           spare: Resources | None = None) -> _Room | None:
    """First fit, nodes in name order. Behind a reservation, a task that would still run at its
    start may use the reserved node only within what the reserved task leaves there (`spare`)."""
    for room in rooms:
        if need.fits_in(room.free) and len(room.free_cpu_ids) >= need.cpus:
            if (reservation is not None and room.name == reservation.node and ends > reservation.at
                    and (spare is None or not need.fits_in(spare))):
                continue
            return room
    return None


def _reserve(job: int, need: Resources, rooms: list[_Room], now: float) -> tuple[Reservation, Resources] | None:
    """The earliest time and node (then name order) at which `need` fits, as the tasks there end
    at their limits; with what that node has beyond `need` then. None if no node ever has room."""
    best: tuple[float, _Room, Resources] | None = None
    for room in rooms:
        if not need.fits_in(room.total):
            continue
        free = Resources(len(room.free_cpu_ids), room.free.memory_mib)
        at = now
        for ends, held in sorted(room.releases, key=lambda release: release[0]):
            if need.fits_in(free):
                break
            if ends == math.inf:
                break
            free, at = free + held, max(ends, now)
        if not need.fits_in(free):
            continue
        if best is None or at < best[0]:
            best = (at, room, free - need)
    if best is None:
        return None
    at, room, spare = best
    return Reservation(job, room.name, at, need), spare
