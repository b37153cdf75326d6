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
- A node is never over-committed (CPUs, memory, devices), nor a licence, and only nodes that
  accept work get tasks. A task goes to the least-loaded node where it fits (placement.py), among
  its queue's nodes that have the features its constraint asks for; an --exclusive task takes a
  node that runs nothing, all its CPUs, and keeps it to itself.
- A job's queue decides whether it starts at all (stopped: QUEUE_STOPPED; outside its time
  window: QUEUE_WINDOW, and `wake_at` is when it opens) and how many of its tasks may run (the
  queue's and each user's limits). Licences are cluster-wide counters: a job short of them
  waits with LICENSES and does not block the jobs behind it (licences are not reserved).
- Every job with pending tasks that it does not start completely gets a `PendingReason`, and
  `details` says what exactly it waits for when there is more to say (which jobs, what time).
- No task starts before its job's `begin_at` or while its dependencies are not met; of the
  singleton jobs of one owner and name, at most one starts in a pass, and none if another job
  of that name started in it. `wake_at` is the earliest begin time or window opening still
  to come: the controller plans again then.
- A node that goes away (`NodeView.ends_at`, a node inside an outer scheduler's allocation)
  gets only tasks whose run limit ends by then, is promised to no task, and holds no
  reservation a task would outlast; a task that would outlast every node waits with RESOURCES
  and does not block the tasks behind it.
- A promised task whose room is free beside it on its node (`stranded`, a `Stranded`: another
  attempt there ended before the one it follows) is judged in its place in the same order, by
  the same walk, as a start there would be: unless the order is blocked, it takes room it fits
  that is still free on its node (`Plan.in_place`: its node starts it now), behind a
  reservation only as a backfilled start may (it ends by the reservation's start, or the
  reserved node is another, or the reserved task leaves it room there); otherwise the jobs
  before it that could start took the room or wait for it, and it stays promised. Whatever held a job before it back
  until now (a limit, a dependency, its begin time) is asked of this pass alone.
- A job of a parallel environment whose snapshot gives its allocation rule (PendingWork.pe_rule,
  other than $pe_slots) has its slots spread over nodes by that rule (spread.py): its start names
  the master node and its other nodes with their CPUs (Start.others). It gets no reservation.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from drover.core.gres import describe
from drover.core.parallel_env import PE_SLOTS
from drover.core.resources import Resources
from drover.scheduler.placement import Need, Reservation, Rooms, Spare, fit, place, reserve, take
from drover.scheduler.priority import DEFAULT_POLICY, Policy, Weigher
from drover.scheduler.promises import Successions
from drover.scheduler.reasons import PendingReason
from drover.scheduler.snapshot import NodeView, PendingWork, QueueView, Stranded, Succession
from drover.scheduler.spread_place import could_ever_spread, place_spread, take_spread

__all__ = ["Plan", "Ranking", "Reservation", "Start", "order_key", "ordered", "plan", "ranking_of"]


@dataclass(frozen=True, slots=True)
class Start:
    job: int
    index: int
    node: str
    cpu_ids: tuple[int, ...]
    gres: tuple[tuple[str, tuple[int, ...]], ...] = ()  # the devices it gets: name → indices on the node
    # A parallel job's other nodes and the CPUs it holds on each (`node` is its master, which runs
    # the job script); empty for a job on one node.
    others: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # A promise (scheduler/promises.py): the attempt whose room it is given, on `node`, when it ends;
    # or, `after_start`, the job and task of a start of this same plan whose attempt it follows.
    after: str | None = None
    after_start: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    starts: tuple[Start, ...] = ()
    pending_reasons: Mapping[int, PendingReason] = field(default_factory=dict)
    details: Mapping[int, str] = field(default_factory=dict)  # job → what it waits for, in words
    wake_at: float | None = None  # the earliest begin time or window opening after `now` that a job waits for
    reservation: Reservation | None = None  # the first blocked job's, when backfill could make one
    backfilled: tuple[int, ...] = ()  # jobs that started ahead of the reserved one, in start order
    reached: int | None = None  # a quick pass that stopped early: how many jobs (in order) it walked
    in_place: tuple[Start, ...] = ()  # stranded promises that take the room free beside them now


Ranked = PendingWork | Stranded  # what has a place in the planner's order


class Ranking:
    """The planner's order (lower first): a job's multifactor priority (its own priority, with
    the plain weights), then its submission time and job id. Fair share is normalised over the
    owners it is given, those of one pass's pending work: one is made a pass and used for all
    that pass puts in order (its walk, its stranded promises, the promises a waiting job
    outranks: controller/handlers/promises.outranked), so that they agree."""

    __slots__ = ("_weigher",)

    def __init__(self, policy: Policy, owners: Iterable[str], now: float) -> None:
        self._weigher = None if policy.weights.plain else Weigher(policy, owners, now)

    def of(self, owner: str, priority: int, queue_priority: int, submitted_at: float,
           job: int) -> tuple[float, float, int]:
        """The place of a job with these fields (what the order reads of a job, whatever holds it)."""
        if self._weigher is None:
            return (-priority, submitted_at, job)
        return (-self._weigher.factors(owner, priority, queue_priority, submitted_at).total, submitted_at, job)

    def __call__(self, item: Ranked) -> tuple[float, float, int]:
        return self.of(item.owner, item.priority, item.queue_priority, item.submitted_at, item.job)


def order_key(work: PendingWork) -> tuple[int, float, int]:
    """The order with the plain weights (Ranking.of, weighing nothing), spelt out: the controller
    keeps its pending work sorted by it between passes (work_cache.py), a call a job."""
    return (-work.priority, work.submitted_at, work.job)


def ranking_of(work: Sequence[PendingWork], policy: Policy, now: float) -> Ranking:
    """The pass's Ranking: weighed over the owners of its pending work (none, plain)."""
    return Ranking(policy, () if policy.weights.plain else {item.owner for item in work}, now)


def ordered(work: Sequence[PendingWork], now: float, policy: Policy = DEFAULT_POLICY,
            rank: Ranking | None = None) -> list[PendingWork]:
    """The work in the planner's order: multifactor priority, then submission time and job id."""
    if policy.weights.plain:
        return sorted(work, key=order_key)
    return sorted(work, key=rank or ranking_of(work, policy, now))


OPEN_QUEUE = QueueView("default")


class _Pass:
    """The state of one planning pass: what is left of the nodes, the licences and the queues'
    limits, and what has been decided so far."""

    def __init__(self, rooms: Rooms, licenses: Mapping[str, int], queues: Mapping[str, QueueView],
                 pe_slots: Mapping[str, int] | None = None) -> None:
        self.rooms = rooms
        self.licenses = dict(licenses)
        self.pe_slots = dict(pe_slots or {})
        self.queues = queues
        self.queue_running = {name: queue.running for name, queue in queues.items()}
        self.user_running: dict[tuple[str, str], int] = {
            (name, user): count for name, queue in queues.items() for user, count in queue.running_by_user.items()}
        self.starts: list[Start] = []
        self.in_place: list[Start] = []
        self.reasons: dict[int, PendingReason] = {}
        self.details: dict[int, str] = {}
        self.wake_at: float | None = None
        self._eligible: dict[object, tuple[frozenset[str] | None, PendingReason | None, str]] = {}
        self._sizes: dict[tuple[int, int], PendingReason | None] = {}

    def wait(self, job: int, reason: PendingReason, detail: str = "") -> None:
        self.reasons[job] = reason
        if detail:
            self.details[job] = detail

    def wake(self, moment: float) -> None:
        self.wake_at = moment if self.wake_at is None else min(self.wake_at, moment)

    def queue(self, item: Ranked) -> QueueView:
        return self.queues.get(item.queue, OPEN_QUEUE)

    def too_big(self, resources: Resources) -> PendingReason | None:
        """TOO_BIG if no node that takes work could ever hold a task of this size."""
        key = (resources.cpus, resources.memory_mib)
        if key not in self._sizes:
            fits = any(resources.fits_in(room.total) for room in self.rooms.all.values())
            self._sizes[key] = None if fits else PendingReason.TOO_BIG
        return self._sizes[key]

    def eligible(self, item: Ranked, need: Need) -> tuple[frozenset[str] | None, PendingReason | None, str]:
        """The nodes the job's tasks may use (None: any), or why none ever could, found once a
        pass for each kind of request."""
        queue = self.queue(item)
        key = (item.queue, item.constraint, need)
        found = self._eligible.get(key)
        if found is None:
            found = self._eligible[key] = _eligible(self.rooms, queue, item, need)
        return found

    def allowed(self, item: PendingWork) -> tuple[int, PendingReason | None, str]:
        """How many of the job's pending tasks its limits let start now, and which limit binds."""
        allowed, reason, detail = item.pending.count, None, ""
        if item.max_running is not None and item.max_running - item.running_count < allowed:
            allowed, reason = max(item.max_running - item.running_count, 0), PendingReason.ARRAY_LIMIT
        queue = self.queue(item)
        if queue.max_running is not None:
            room = max(queue.max_running - self.queue_running.get(item.queue, 0), 0)
            if room < allowed:
                allowed, reason = room, PendingReason.QUEUE_LIMIT
                detail = f"queue {item.queue} runs {queue.max_running} tasks at most (max_running)"
        if queue.max_running_per_user is not None:
            room = max(queue.max_running_per_user - self.user_running.get((item.queue, item.owner), 0), 0)
            if room < allowed:
                allowed, reason = room, PendingReason.USER_LIMIT
                detail = (f"{item.owner} runs {queue.max_running_per_user} tasks at most in queue {item.queue} "
                          "(max_running_per_user)")
        for name, count in item.licenses:
            free = self.licenses.get(name, 0)
            if free // count < allowed:
                allowed, reason = free // count, PendingReason.LICENSES
                detail = (f"waiting for licences: {count} {name} a task, {free} free" if name in self.licenses
                          else f"the cluster has no licence {name} ([licenses] in drover.toml)")
        if item.pe is not None:
            name, count = item.pe
            free = self.pe_slots.get(name, 0)
            if free // count < allowed:
                allowed, reason = free // count, PendingReason.PE_SLOTS
                detail = (f"waiting for slots of parallel environment {name}: {count} a task, {free} of its "
                          f"slots free" if name in self.pe_slots
                          else f"the cluster has no parallel environment {name} ([parallel_environments] in drover.toml)")
        return allowed, reason, detail

    def started(self, item: PendingWork, start: Start) -> None:
        self.starts.append(start)
        self.queue_running[item.queue] = self.queue_running.get(item.queue, 0) + 1
        self.user_running[item.queue, item.owner] = self.user_running.get((item.queue, item.owner), 0) + 1
        for name, count in item.licenses:
            self.licenses[name] -= count
        if item.pe is not None:
            self.pe_slots[item.pe[0]] -= item.pe[1]

    def claim(self, stranded: Stranded, now: float, reservation: Reservation | None, spare: Spare | None) -> None:
        """A stranded promise's turn in the order (the order is not blocked): it takes room it
        fits on its node now, as a start there would (behind a reservation, a backfill: on the
        reserved node only if it ends by the reservation's start or within what the reserved
        task leaves), within every test a start makes but those a dispatched task passed
        already (its dependencies and begin time; its limits and licences count it)."""
        room = self.rooms.all.get(stranded.node)
        queue = self.queues.get(stranded.queue)
        if room is None or queue is not None and closed(queue) is not None:
            return
        need = Need(stranded.resources)
        names, unmatched, _ = self.eligible(stranded, need)  # its queue's nodes, its constraint
        if unmatched is not None or names is not None and room.name not in names:
            return
        ends = now + stranded.run_limit_s if stranded.run_limit_s is not None else math.inf
        if fit(need, room, reservation, ends, spare) is None:
            return
        cpu_ids = take(need, room, self.rooms, {}, ends, reservation, spare)
        self.in_place.append(Start(stranded.job, stranded.index, stranded.node, cpu_ids))


def _eligible(rooms: Rooms, queue: QueueView, item: Ranked,
              need: Need) -> tuple[frozenset[str] | None, PendingReason | None, str]:
    names: frozenset[str] | None = None
    if queue.nodes is not None:
        names = frozenset(name for name in rooms.all if name in queue.nodes)
        if not names:
            failed = in_error_note(queue, rooms.all)
            return names, PendingReason.NO_NODE_MATCHES, (
                f"{failed}; no other node of it is up" if failed else f"no node of queue {queue.name} is up")
    constraint = item.constraint
    if constraint is not None:
        candidates = names if names is not None else frozenset(rooms.all)
        names = frozenset(name for name in candidates if constraint.matches(rooms.all[name].features))
        if not names:
            return names, PendingReason.NO_NODE_MATCHES, (
                f"no node that is up has the features {constraint.text} "
                f"({'; '.join(f'{name} {constraint.unmet(rooms.all[name].features)}' for name in sorted(candidates)[:3])})")
    pool = [rooms.all[name] for name in names] if names is not None else list(rooms.all.values())
    if need.gres and not any(room.could_ever_hold(Need(room.total, need.gres)) for room in pool):
        return names, PendingReason.NO_NODE_MATCHES, f"no node that is up has {describe(need.gres)}"
    if not any(room.could_ever_hold(need) for room in pool):
        return names, PendingReason.TOO_BIG, ""
    return names, None, ""


def closed(queue: QueueView) -> tuple[PendingReason, str] | None:
    """Why no job of the queue starts now (stopped, or outside its time window), in words; None
    when its jobs may start."""
    if not queue.starting:
        return PendingReason.QUEUE_STOPPED, f"queue {queue.name} is stopped: no job of it starts"
    if queue.opens_at is not None:
        return PendingReason.QUEUE_WINDOW, (f"queue {queue.name} starts jobs only in its time window, which opens "
                                            f"{_local_time(queue.opens_at)}")
    return None


def in_error_note(queue: QueueView, up: Mapping[str, object]) -> str:
    """"queue Q is in error on n1, n2 (...)" and "queue Q is suspended on n3 (...)": its instances
    in error or suspended among the nodes that are up, which would take its jobs but for that
    (`drover why` says it), or ""."""
    failed = sorted(name for name in queue.in_error if name in up)
    suspended = sorted(name for name in queue.suspended if name in up)
    notes = []
    if failed:
        notes.append(f"queue {queue.name} is in error on {_some(failed)} (a prolog, epilog or PE method failed "
                     f"there; drover node resume NODE --queue {queue.name} clears it)")
    if suspended:
        notes.append(f"queue {queue.name} is suspended on {_some(suspended)} (drover queue unsuspend "
                     f"{queue.name}@NODE, qmod -usq)")
    return "; ".join(notes)


def _some(names: list[str]) -> str:
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def plan(work: Sequence[PendingWork], nodes: Sequence[NodeView], now: float, policy: Policy = DEFAULT_POLICY,
         licenses: Mapping[str, int] | None = None, queues: Mapping[str, QueueView] | None = None,
         quick: bool = False, presorted: bool = False, pe_slots: Mapping[str, int] | None = None,
         promises: bool = False, stranded: Sequence[Stranded] = (), rank: Ranking | None = None) -> Plan:
    """`licenses`: each licence's free count now; `queues`: each queue's state, nodes and limits
    (a queue not named there is open, on every node, without limits).

    `quick`: the pass an event asks for on a long queue (Slurm's main scheduler, as against its
    backfill scheduler): it walks the jobs in order only up to the first that must wait for
    room, which gets RESOURCES and no reservation, and stops there. Jobs it did not reach get no
    reason (`Plan.reached` says how many it walked); the full pass gives them theirs.
    `presorted`: `work` is already in the planner's order (order_key; plain weights only).
    `pe_slots`: each parallel environment's free slots now; like licences, a job short of them
    waits with PE_SLOTS and does not block the jobs behind it.
    `promises`: a task that cannot start now may be promised the room of a running attempt
    (scheduler/promises.py), in order, until none is left; no reservation is made after one in
    the same pass (its arithmetic does not know the promised task's run).
    `stranded`: promised tasks whose room is free beside them now, each judged in its place in
    the order (`Plan.in_place` those that take it).
    `rank`: the pass's order (Ranking), when the caller orders more by it (ranking_of(work) if
    not given)."""
    decided = _Pass(Rooms(nodes), licenses or {}, queues or {}, pe_slots)
    successions = Successions(nodes) if promises else None
    promised = False
    started_names: set[tuple[str, str]] = set()  # owner and name of the jobs started in this pass
    blocked = False
    reservation: Reservation | None = None
    spare: Spare | None = None  # what the reserved node has at the reservation beyond its need
    backfilled: list[int] = []
    if rank is None and (stranded or not policy.weights.plain):
        rank = ranking_of(work, policy, now)
    keys: list[tuple[float, float, int]] | None = None  # each walked job's place, where weighing made it
    walk: Sequence[PendingWork]
    if stranded and rank is not None and not policy.weights.plain:
        # The sort's keys are kept for the walk, which compares them with the claims' (weighing
        # each job again there cost as much as the sort).
        keyed = sorted(zip(map(rank, work), work), key=_first)
        keys, walk = [key for key, _ in keyed], [item for _, item in keyed]
        del keyed
    else:
        walk = work if presorted and policy.weights.plain else ordered(work, now, policy, rank)
    # The stranded promises in the order, each claimed before the first job ranked after it (a
    # promise ranks first among its own job's tasks: it was decided before those waiting).
    claims = sorted(((rank(one), one) for one in stranded), key=_first) if stranded and rank is not None else []
    claimed = 0
    reached = 0
    for item in walk:
        if quick and blocked:
            break
        if claimed < len(claims):
            if blocked:
                claimed = len(claims)  # nothing starts after a block: no claim left can succeed
            else:
                assert rank is not None  # made whenever there are claims
                place_of = keys[reached] if keys is not None else rank(item)
                while claimed < len(claims) and claims[claimed][0] <= place_of:
                    decided.claim(claims[claimed][1], now, reservation, spare)
                    claimed += 1
        reached += 1
        if item.pending.count == 0:
            continue
        if item.dependencies_failed or not item.dependencies_met:
            never = item.dependencies_failed
            decided.wait(item.job, PendingReason.DEPENDENCY_NEVER_SATISFIED if never else PendingReason.DEPENDENCY,
                         item.waiting_for)
            continue
        if item.begin_at is not None and item.begin_at > now:
            decided.wait(item.job, PendingReason.BEGIN_TIME, "waiting for its begin time, " + _local_time(item.begin_at))
            decided.wake(item.begin_at)
            continue
        queue = decided.queues.get(item.queue)  # None: open, on every node, without limits
        shut = closed(queue) if queue is not None else None
        if shut is not None:
            assert queue is not None
            decided.wait(item.job, *shut)
            if shut[0] is PendingReason.QUEUE_WINDOW and queue.opens_at is not None:
                decided.wake(queue.opens_at)
            continue
        if item.singleton and (item.owner, item.name) in started_names:
            decided.wait(item.job, PendingReason.DEPENDENCY,
                         "waiting for the job of the same name (singleton) started now to end")
            continue
        if not decided.rooms:
            decided.wait(item.job, PendingReason.NO_NODES)
            continue
        if item.pe is not None and item.pe_rule != PE_SLOTS and not item.gres and not item.exclusive:
            started_spread, blocked = _spread_job(decided, item, now, reservation, blocked)
            if started_spread:
                started_names.add((item.owner, item.name))
                if reservation is not None and (not backfilled or backfilled[-1] != item.job):
                    backfilled.append(item.job)
            continue
        if not item.gres and item.constraint is None and not item.exclusive and (queue is None or queue.nodes is None):
            # The common request, CPUs and memory anywhere: whether any node could ever hold it
            # is asked once a pass for each size (most jobs of a long queue are behind the block).
            allowed_nodes, unmatched, why = None, decided.too_big(item.resources), ""
            need = None
        else:
            need = Need(item.resources, item.gres, item.exclusive)
            allowed_nodes, unmatched, why = decided.eligible(item, need)
        if unmatched is not None:
            decided.wait(item.job, unmatched, why)
            continue
        if blocked:
            decided.wait(item.job, PendingReason.PRIORITY)
            continue
        if need is None:
            need = Need(item.resources)
        allowed, limit, limit_detail = decided.allowed(item)
        started = 0
        ends = now + item.run_limit_s if item.run_limit_s is not None else math.inf
        if ends > decided.rooms.last_end:
            decided.wait(item.job, PendingReason.RESOURCES, outlasts_nodes(item.run_limit_s))
            continue
        candidates = (index for index in item.pending.iterate() if index not in item.blocked)
        for index in itertools.islice(candidates, allowed):
            found = place(need, decided.rooms, allowed_nodes, reservation, ends, spare)
            if found is None and successions and reservation is None:
                follows = successions.take(need, allowed_nodes)
                if follows is not None:
                    node, succession = follows
                    decided.started(item, Start(item.job, index, node, succession.cpu_ids[:need.resources.cpus],
                                                after=succession.attempt or None, after_start=succession.start))
                    started_names.add((item.owner, item.name))
                    started += 1
                    promised = True
                    continue
            if found is None:
                if reservation is not None:
                    fits = place(need, decided.rooms, allowed_nodes, None, ends, None) is not None
                    decided.wait(item.job, PendingReason.PRIORITY if fits else PendingReason.RESOURCES,
                                 f"would delay job {reservation.job}, reserved to start by "
                                 f"{_local_time(reservation.at)} on {reservation.node}" if fits else "")
                    break
                made = (reserve(item.job, need, decided.rooms, allowed_nodes, now, ends - now)
                        if policy.backfill and not quick and not promised else None)
                if made is None:
                    decided.wait(item.job, PendingReason.RESOURCES, in_error_note(queue, decided.rooms.all) if queue else "")
                    blocked = True
                else:
                    reservation, spare = made
                    decided.wait(item.job, PendingReason.RESERVED,
                                 f"reserved: starts by {_local_time(reservation.at)} on {reservation.node}")
                break
            room, gres = found
            cpu_ids = take(need, room, decided.rooms, gres, ends, reservation, spare)
            if reservation is not None and (not backfilled or backfilled[-1] != item.job):
                backfilled.append(item.job)
            decided.started(item, Start(item.job, index, room.name, cpu_ids, tuple(sorted(gres.items()))))
            if successions is not None and not gres and not need.exclusive:
                successions.add(room.name, Succession("", cpu_ids, need.resources.memory_mib, ends, (item.job, index)),
                                room.ends_at == math.inf)
            started_names.add((item.owner, item.name))
            started += 1
        else:
            if started < item.pending.count and item.blocked and started < allowed:
                decided.wait(item.job, PendingReason.DEPENDENCY, item.waiting_for)  # the tasks left wait for their own
            elif started < item.pending.count and limit is not None:
                decided.wait(item.job, limit, limit_detail)
    for _, one in claims[claimed:] if not blocked else ():  # ranked after every job walked
        decided.claim(one, now, reservation, spare)
    return Plan(tuple(decided.starts), decided.reasons, decided.details, decided.wake_at, reservation,
                tuple(backfilled), reached if quick and blocked else None, tuple(decided.in_place))


def _first(pair: tuple[tuple[float, float, int], object]) -> tuple[float, float, int]:
    return pair[0]


def _spread_job(decided: _Pass, item: PendingWork, now: float, reservation: Reservation | None,
                blocked: bool) -> tuple[int, bool]:
    """A parallel job whose slots may span nodes (its PE's allocation rule is not $pe_slots): each
    task starts where the rule puts its slots now (spread.py), the master node first. No
    reservation is made for it: when it does not fit, the order behind it is strict, as when no
    reservation can be made; behind an earlier job's reservation it leaves the reserved node alone
    unless it ends by the reservation's start. How many started, and whether the order is now
    blocked."""
    allowed_nodes, unmatched, why = decided.eligible(item, Need(Resources(1, 0)))
    if unmatched is None and not could_ever_spread(item.pe_rule, item.resources, decided.rooms, allowed_nodes):
        unmatched, why = PendingReason.TOO_BIG, ""
    if unmatched is not None:
        decided.wait(item.job, unmatched, why)
        return 0, blocked
    if blocked:
        decided.wait(item.job, PendingReason.PRIORITY)
        return 0, blocked
    allowed, limit, limit_detail = decided.allowed(item)
    ends = now + item.run_limit_s if item.run_limit_s is not None else math.inf
    kept = reservation.node if reservation is not None and ends > reservation.at else None
    started = 0
    candidates = (index for index in item.pending.iterate() if index not in item.blocked)
    for index in itertools.islice(candidates, allowed):
        chosen = place_spread(item.pe_rule, item.resources, decided.rooms, allowed_nodes, kept, ends)
        if chosen is None:
            decided.wait(item.job, PendingReason.RESOURCES)
            return started, reservation is None
        taken = take_spread(chosen, item.resources, decided.rooms, ends)
        (master, cpu_ids), others = taken[0], taken[1:]
        decided.started(item, Start(item.job, index, master, cpu_ids, (), others))
        started += 1
    if started < item.pending.count and item.blocked and started < allowed:
        decided.wait(item.job, PendingReason.DEPENDENCY, item.waiting_for)
    elif started < item.pending.count and limit is not None:
        decided.wait(item.job, limit, limit_detail)
    return started, blocked


def outlasts_nodes(run_limit_s: float | None) -> str:
    """Why a task waits that would run past the end of every node (NodeView.ends_at)."""
    if run_limit_s is None:
        return "every node goes away (its allocation ends), and a job without a time limit (-t) starts only on one that stays"
    return "every node goes away (its allocation ends) before this job's time limit would"


def _local_time(moment: float) -> str:
    return datetime.fromtimestamp(moment).strftime("%Y-%m-%d %H:%M:%S")
