"""Run the planner over the working set and turn its starts into attempts and node orders."""

from __future__ import annotations

import base64
import logging
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, overload

import msgspec

from drover.cluster.named_methods import configured_methods, operator_signals
from drover.config_schema import (
    EnvironmentSection,
    ParallelEnvironmentSection,
    QueueSection,
    SchedulerSection,
)
from drover.controller.effects import Outcome
from drover.controller.followers import fast_attempt_key
from drover.controller.handlers import checkpoints, parallel_envs, promises, resource_requests
from drover.controller.handlers.lifecycle import change_task, drained_if_idle
from drover.controller.handlers.queue_load import planner_views
from drover.controller.handlers.queues import queues_in_effect
from drover.controller.handlers.waiting import (
    JobWait,
    ProgressLookup,
    cancel_for_dependency,
    job_wait,
)
from drover.controller.handlers.work_cache import WorkCache
from drover.controller.state import ControllerState
from drover.core.checkpoints import Environment as CheckpointEnvironment
from drover.core.dependencies import Verdict
from drover.core.exit_status import GRID_ENGINE, ExitSemantics
from drover.core.job import Attempt, Job, JobPayload, Task
from drover.core.job_state import JobState, Trigger
from drover.core.node import Node
from drover.core.patterns import expand
from drover.core.queues import Queue
from drover.core.resources import Resources
from drover.protocol.node_channel import File, StartAttempt
from drover.records import AttemptIdentity, AttemptOrder, JobRecord, Placement, SiteSettings
from drover.scheduler.plan import Plan, Ranking, Start, plan, ranking_of
from drover.scheduler.priority import Policy, Weights
from drover.scheduler.reasons import PendingReason, Waiting
from drover.scheduler.snapshot import (
    NodeView,
    PendingIndices,
    PendingWork,
    QueueView,
    Release,
    Stranded,
    Succession,
)
from drover.store.base import Store
from drover.store.faults import StoreFault


@dataclass(frozen=True, slots=True)
class OrderOptions:
    """The cluster's settings that travel in every start order."""

    kill_grace_s: float = 10.0  # between the warning signal and SIGKILL
    queues: Mapping[str, QueueSection] = field(default_factory=dict)  # name → its prolog/epilog, priority
    scheduler: SchedulerSection = field(default_factory=SchedulerSection)  # the priority's weights, backfill
    licenses: Mapping[str, int] = field(default_factory=dict)  # [licenses]: each licence's count
    # [controller] forbid_reschedule, forbid_apperror, requeue_held: what an attempt's end means
    # (the node's final record and end mail read the first two from the order)
    exits: ExitSemantics = GRID_ENGINE
    environments: Mapping[str, EnvironmentSection] = field(default_factory=dict)  # [environments.NAME]
    # [parallel_environments.NAME]: each PE's slots and procedures
    parallel_environments: Mapping[str, ParallelEnvironmentSection] = field(default_factory=dict)
    checkpoints: Mapping[str, CheckpointEnvironment] = field(default_factory=dict)  # [checkpoints.NAME]


log = logging.getLogger("drover.controller")

NO_QUEUE_METHODS = QueueSection()  # "default" and any queue drover.toml does not name


def schedule(state: ControllerState, now: float, store: Store, orders: OrderOptions) -> Outcome:
    """Plan, then start what the plan starts, job by job. An exception while reading one job's
    pending work or starting one of its tasks sets that job aside (Outcome.fault: the shell
    fails it, with the reason); one while planning it leaves it pending (_plan). The other jobs
    are planned and started all the same.
    A fault of the store itself (StoreFault) is no job's: it ends the pass, before any change."""
    outcome = Outcome()
    for node in state.nodes.values():  # a draining node whose last attempt ended meanwhile
        drained_if_idle(outcome, node, now)
    cache = state.work
    full_due = cache.partial and now >= cache.last_full + orders.scheduler.full_pass_s
    promising = orders.scheduler.promises
    if (state.pending_reasons and not cache.dirty and not cache.everything and not full_due
            and not any(node.state.accepts_work
                        and (node.free.cpus or promising and len(node.holders) > state.followers.followed_on(node.name))
                        for node in state.nodes.values())):
        return outcome  # nothing changed and nothing can start or be promised: the last pass's reasons hold
    full = cache.everything  # a working set just loaded: every job gets its reason at once
    _refresh(state, outcome, store, now, orders)
    kept, stranded = (promises.stranded(state, lambda job: (queue_priority(state, job, orders), run_limit(job, orders)))
                      if promising and state.followers else (promises.moving_room(state), []))
    if not cache.items and not stranded:
        state.pending_reasons = {}
        state.wake_at = None
        return outcome
    full = full or len(cache.items) <= QUICK_ABOVE or now - cache.last_full >= orders.scheduler.full_pass_s
    policy, releases = _policy(state, now, orders)
    nodes = [node_view(node, releases.get(node.name, ()),
                       promises.successions(state, node, orders.kill_grace_s) if promising else (),
                       kept.get(node.name))
             for node in state.nodes.values()]
    presorted = policy.weights.plain
    work: Sequence[PendingWork] = InOrder(cache) if presorted else list(cache.items.values())
    rank = ranking_of(work, policy, now)  # the pass's one order: the planner's, and what outranks a promise
    decided = _plan(work, nodes, now, policy, _free_licenses(state, orders),
                    planner_views(state, orders.queues, now), quick=not full, presorted=presorted,
                    pe_slots=parallel_envs.free_slots(state, orders.parallel_environments), promises=promising,
                    stranded=stranded, rank=rank)
    _record_reasons(state, decided, work, now, orders)
    promises.start_in_place(state, outcome, decided.in_place, now)
    if promising:
        promises.outranked(state, outcome, decided.pending_reasons, now, job_rank(rank, orders, state))
    failed = {fault.job_id for fault in outcome.faults}
    starts = [start for start in decided.starts if start.job not in failed]
    starts, more = within_pass_bytes(state, starts)
    outcome.reschedule = outcome.reschedule or more
    # The scripts, environments and staged files of the jobs that start, one read for all of
    # them, each job's once (an array's tasks share it): the working set holds none.
    payloads = payloads_of(state, store, sorted({start.job for start in starts}))
    named: dict[tuple[int, int], str] = {}  # the attempts this pass starts, for the promises behind them
    for start in starts:
        if start.job in failed:
            continue
        if start.after_start is not None:
            if start.after_start not in named:
                continue  # what it was to follow did not start: it waits for the next pass
            start = replace(start, after=named[start.after_start], after_start=None)
        try:
            named[start.job, start.index] = _start(state, outcome, start, now, orders, payloads,
                                                   backfilled=start.job in decided.backfilled)
        except Exception as error:
            failed.add(start.job)
            outcome.fault(start.job, error, f"starting task {start.job}.{start.index} on node {start.node}")
    return outcome


def payloads_of(state: ControllerState, store: Store, job_ids: list[int]) -> dict[int, JobPayload]:
    """The payloads of the jobs that start this pass: an array's from what the state kept of it
    at its first start (its tasks start one or two a pass on a busy cluster, and each pass read
    its script and environment again: about 2 % of the controller's CPU on an array of
    /bin/true), the others' in one read of the store."""
    found = {job_id: state.array_payloads[job_id] for job_id in job_ids if job_id in state.array_payloads}
    missing = [job_id for job_id in job_ids if job_id not in found]
    if missing:
        read = store.job_payloads(missing)
        for job_id, payload in read.items():
            state.keep_payload(state.jobs[job_id], payload)
        found.update(read)
    return found


def node_view(node: Node, releases: Sequence[Release] = (), successions: tuple[Succession, ...] = (),
              kept: promises.Kept | None = None) -> NodeView:
    """A node as the planner sees it: what is really free there, even while the running attempts
    hold more than the node now has (core/node.py); `successions`: the attempts a task may be
    promised to follow there (handlers/promises.py); `kept`: free room kept for the promises
    told to start there in place, and for the tasks whose promise was taken back to start there
    (promises.stranded), which no one else may take."""
    free, free_cpu_ids = node.free, node.free_cpu_ids()
    if kept:
        free = kept.left_of(free)
        free_cpu_ids = frozenset(kept.free_cpu_ids(free_cpu_ids))
    return NodeView(node.name, node.state, node.total, free, free_cpu_ids, tuple(releases),
                    node.devices, node.free_devices(), node.features, node.running, node.load or 0.0,
                    node.overdrawn, successions, node.ends_at if node.ends_at is not None else math.inf)


def job_rank(rank: Ranking, orders: OrderOptions, state: ControllerState) -> Callable[[Job], tuple[float, float, int]]:
    """A job's place in the pass's order (`rank`, the planner's), for jobs not in its pending
    work (a promised one): the same Ranking of the same fields, read from the job."""
    return lambda job: rank.of(job.owner, job.priority, queue_priority(state, job, orders), job.submitted_at, job.id)


QUICK_ABOVE = 1000  # waiting jobs: above this many, an event's pass is the quick one (between full passes)
PASS_PAYLOAD_BYTES = 256 * 1024 * 1024  # the scripts, environments and files a pass reads and sends, at most


def within_pass_bytes(state: ControllerState, starts: list[Start]) -> tuple[list[Start], bool]:
    """The plan's starts whose jobs' payloads, read and sent together, weigh PASS_PAYLOAD_BYTES
    at most (the first job's always), so that a pass that starts many large jobs does not hold
    all their scripts at once; and whether some were left (another pass starts them at once)."""
    weight, seen = 0, set[int]()
    for taken, start in enumerate(starts):
        if start.job in seen:
            continue
        weight += state.jobs[start.job].payload_bytes
        if seen and weight > PASS_PAYLOAD_BYTES:
            return starts[:taken], True
        seen.add(start.job)
    return starts, False


class InOrder(Sequence[PendingWork]):
    """The cached work in the planner's order, read without copying it (a quick pass reads a
    few jobs of a long queue)."""

    def __init__(self, cache: WorkCache) -> None:
        self._items, self._order = cache.items, cache.order

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, at: int) -> PendingWork: ...

    @overload
    def __getitem__(self, at: slice) -> Sequence[PendingWork]: ...

    def __getitem__(self, at: int | slice) -> PendingWork | Sequence[PendingWork]:
        if isinstance(at, slice):
            return [self._items[key[2]] for key in self._order[at]]
        return self._items[self._order[at][2]]

    def __iter__(self) -> Iterator[PendingWork]:
        items = self._items
        return (items[key[2]] for key in self._order)


def _refresh(state: ControllerState, outcome: Outcome, store: Store, now: float, orders: OrderOptions) -> None:
    """Build again the pending work of the jobs that changed since the last pass (work_cache.py)."""
    lookup = ProgressLookup(state, store)
    busy = _BusyNames(state)

    def build(job_id: int) -> tuple[PendingWork | None, frozenset[int], bool]:
        job = state.jobs.get(job_id)
        if job is None:
            return None, frozenset(), False
        depends_on = frozenset(d.job for d in job.dependencies.on if d.kind != "singleton")
        try:
            item = _pending_work(state, outcome, job, lookup, busy, now, orders)
        except StoreFault:
            raise
        except Exception as error:
            outcome.fault(job.id, error, "reading what it waits for")
            item = None
        return item, depends_on, job.dependencies.singleton

    try:
        state.work.refresh(list(state.jobs), build)
    except StoreFault:
        state.work.rebuild_all()  # part of it was built: build it all next time
        raise


def _record_reasons(state: ControllerState, decided: Plan, work: Sequence[PendingWork], now: float,
                    orders: OrderOptions) -> None:
    """The pass's reasons. A full pass gives every waiting job its reason; a quick one that
    stopped early gives those it reached theirs, and the others keep what the last pass said
    until the next full pass, which `wake_at` asks for."""
    cache = state.work
    reasons = {job: Waiting(reason, decided.details.get(job, "")) for job, reason in decided.pending_reasons.items()}
    if decided.reached is None:
        state.pending_reasons = reasons
        state.wake_at = decided.wake_at
        cache.last_full, cache.partial = now, False
        return
    cache.partial = True
    for item in work[:decided.reached]:
        state.pending_reasons.pop(item.job, None)
    state.pending_reasons.update(reasons)
    next_full = cache.last_full + orders.scheduler.full_pass_s
    state.wake_at = min((moment for moment in (decided.wake_at, state.wake_at, next_full)
                         if moment is not None and moment > now), default=None)


def _free_licenses(state: ControllerState, orders: OrderOptions) -> dict[str, int]:
    """Each licence's count less what the active tasks hold (walked only where licences exist)."""
    free = dict(orders.licenses)
    if not free:
        return free
    for job, _ in state.held():
        for name, count in resource_requests.of_job(job).licenses:
            free[name] = free.get(name, 0) - count
    return free


def policy_of(state: ControllerState, now: float, orders: OrderOptions) -> Policy:
    """The priority's weights and what they weigh, as drover.toml and the working set have them."""
    return _policy(state, now, orders, releases=False)[0]


def _policy(state: ControllerState, now: float, orders: OrderOptions,
            releases: bool = True) -> tuple[Policy, dict[str, list[Release]]]:
    """The planner's policy (with every user's usage, running attempts counted), and each node's
    releases: when what each active attempt holds comes back, at its start plus its time limit
    and the kill grace (never, for an attempt without a limit; now, for one past it)."""
    config = orders.scheduler
    fairshare = config.priority_weight_fairshare > 0
    held: dict[str, list[Release]] = {}
    usage = state.usage.at(now) if fairshare else {}
    if fairshare or (releases and config.backfill):
        for job, attempt in state.held():
            began = attempt.started_at or attempt.dispatched_at
            if fairshare and attempt.exit is None:
                cpus = len(attempt.cpu_ids) + sum(len(cpu_ids) for _, cpu_ids in attempt.others)
                usage[job.owner] = usage.get(job.owner, 0.0) + cpus * max(now - began, 0.0)
            if releases and config.backfill:
                limit = job.spec.time_limit_s
                ends = max(began + limit + orders.kill_grace_s, now) if limit else math.inf
                follower = state.followers.get(promises.key_of(attempt))  # its room stays busy through its follower's run
                if follower is not None and follower[0] in state.jobs:
                    then = state.jobs[follower[0]].spec.time_limit_s
                    ends = ends + then + orders.kill_grace_s if then else math.inf
                node = state.nodes.get(attempt.node)
                devices = frozenset(node.devices_of(attempt.gres)) if node is not None else frozenset()
                exclusive = resource_requests.of_job(job).exclusive
                for name, cpu_ids, memory_mib in attempt.rooms(job.resources.memory_mib):
                    held.setdefault(name, []).append(Release(
                        ends, Resources(len(cpu_ids), memory_mib), devices if name == attempt.node else frozenset(),
                        exclusive))
    weights = Weights(config.priority_weight_age, config.priority_weight_fairshare, config.priority_weight_queue,
                      config.priority_weight_job, config.priority_max_age_s)
    top = max((queue.priority for queue in queues_in_effect(state, orders.queues).values()), default=0)
    return Policy(weights, usage, dict(config.shares), top, config.backfill), held


def _plan(work: Sequence[PendingWork], nodes: list[NodeView], now: float, policy: Policy,
          licenses: Mapping[str, int], queues: Mapping[str, QueueView], quick: bool = False,
          presorted: bool = False, pe_slots: Mapping[str, int] | None = None, promises: bool = False,
          stranded: Sequence[Stranded] = (), rank: Ranking | None = None) -> Plan:
    """The planner's decisions. An exception from it is the controller's fault, never a job's:
    each job is then planned alone to find which the planner cannot plan; those stay pending,
    untouched, with the reason PLANNING_ERROR, the error is logged with its traceback, and the
    others are planned again (in a full pass). An exception no one job causes alone is raised
    (the pass starts nothing, and the jobs stay as they are)."""
    try:
        return plan(work, nodes, now, policy, licenses, queues, quick=quick, presorted=presorted, pe_slots=pe_slots,
                    promises=promises, stranded=stranded, rank=rank)
    except Exception as error:
        failure = error
    kept = []
    unplanned: dict[int, PendingReason] = {}
    details: dict[int, str] = {}
    for item in work:
        try:
            plan([item], nodes, now, policy, licenses, queues, pe_slots=pe_slots)
        except Exception as error:
            log.exception("planning job %d failed; it stays pending and is planned again on the next pass", item.job)
            unplanned[item.job] = PendingReason.PLANNING_ERROR
            details[item.job] = f"the controller could not plan it ({type(error).__name__}: {error}); " \
                                "it stays pending and is planned again"
        else:
            kept.append(item)
    if not unplanned:
        raise failure
    decided = (plan(kept, nodes, now, policy, licenses, queues, pe_slots=pe_slots, promises=promises, stranded=stranded,
                    rank=rank)
               if kept or stranded else Plan())
    return replace(decided, pending_reasons={**decided.pending_reasons, **unplanned},
                   details={**decided.details, **details})


def _start(state: ControllerState, outcome: Outcome, start: Start, now: float, orders: OrderOptions,
           payloads: Mapping[int, JobPayload], backfilled: bool = False) -> str:
    """One start of the plan: the task record, its new attempt, the node's room, the order; the
    attempt's name. `backfilled`: it starts ahead of a job whose room is reserved (its dispatch
    event says so, and the metrics count it once it is committed)."""
    job = state.jobs[start.job]
    payload = payloads.get(job.id)
    if payload is None:
        raise LookupError(f"the store holds no script for job {job.id}")
    task = job.tasks.get(start.index)
    if task is None:
        job.take_fresh(start.index)
        task = Task(job.id, start.index, JobState.PENDING, now)
        job.add_task(task)
        outcome.changes.job(job)
    state.attempts.pop((job.id, task.index, task.attempt), None)
    gres = dict(start.gres)
    detail: dict[str, Any] = {"gres": {name: list(indices) for name, indices in gres.items()}} if gres else {}
    if start.others:  # a parallel job's other nodes (sge_pe(5) allocation rule across hosts)
        detail["others"] = {node: list(cpu_ids) for node, cpu_ids in start.others}
    if backfilled:
        detail["backfill"] = True
    if start.after is not None:  # promised: it starts when that attempt ends (the metrics count it then)
        detail["promised_behind"] = start.after
    change_task(outcome, task, Trigger.DISPATCH, now, node=start.node, cpu_ids=list(start.cpu_ids), **detail)
    attempt = Attempt(job.id, task.index, task.attempt, start.node, start.cpu_ids, now, gres=gres,
                      others=start.others, after=start.after)
    state.attempts[job.id, task.index, task.attempt] = attempt
    followed = fast_attempt_key(start.after) if start.after is not None else None
    if followed is not None:  # promised: it takes the room of the one it follows when that one ends
        state.followers.add(followed, (job.id, task.index, task.attempt), start.node)
    else:
        promises.take(state, job, attempt)
    outcome.changes.attempt(attempt)
    outcome.send(start.node, start_order(job, payload, attempt, orders, queue_nice(state, job, orders),
                                         queue_of(state, job, orders)))
    return attempt.name


class _BusyNames:
    """The owners and names of the jobs running now, for singleton dependencies; found only
    when a pass meets one, since it walks every task of the working set."""

    def __init__(self, state: ControllerState) -> None:
        self.state = state
        self._names: set[tuple[str, str]] | None = None

    def running_other_than(self, job: Job) -> bool:
        if self._names is None:
            self._names = {(other.owner, other.name) for other in self.state.jobs.values()
                           if any(task.state.is_active for task in other.tasks.values())}
        if (job.owner, job.name) not in self._names:
            return False
        return any(other.id != job.id and other.owner == job.owner and other.name == job.name
                   and any(task.state.is_active for task in other.tasks.values())
                   for other in self.state.jobs.values())


def _pending_work(state: ControllerState, outcome: Outcome, job: Job, lookup: ProgressLookup, busy: _BusyNames,
                  now: float, orders: OrderOptions) -> PendingWork | None:
    tally = job.tally()  # not a walk of every task: a big array's pass costs what changed
    requeued = tally.requeued()
    fresh_held = job.fresh_state is not JobState.PENDING
    pending = PendingIndices(requeued, job.indices, job.fresh_from, fresh_held, frozenset(job.fresh_skip))
    if not requeued and (fresh_held or not job.fresh_count):
        if job.dependencies and job.fresh_state is JobState.HELD and job.fresh_count:
            _cancel_if_hopeless(state, outcome, job, lookup, busy, None, now)  # a held job is cancelled too
        return None
    wait: JobWait | None = JobWait(Verdict.MET)
    if job.dependencies:
        wait = _cancel_if_hopeless(state, outcome, job, lookup, busy, pending, now)
    if wait is None:
        return None
    requests = resource_requests.of_job(job)
    return PendingWork(
        job=job.id, owner=job.owner, priority=job.priority, submitted_at=job.submitted_at,
        resources=job.resources, pending=pending,
        running_count=tally.active,
        max_running=job.max_running, dependencies_met=wait.verdict is Verdict.MET,
        dependencies_failed=wait.verdict is Verdict.NEVER, waiting_for=wait.text, blocked=wait.blocked,
        begin_at=job.begin_at, name=job.name, singleton=job.dependencies.singleton,
        queue_priority=queue_priority(state, job, orders), run_limit_s=run_limit(job, orders),
        queue=job.spec.queue, gres=requests.gres, licenses=requests.licenses,
        constraint=requests.constraint, exclusive=requests.exclusive, pe=parallel_envs.of_job(job),
        pe_rule=parallel_envs.rule_of(job, orders.parallel_environments),
    )


def queue_priority(state: ControllerState, job: Job, orders: OrderOptions) -> int:
    queue = queues_in_effect(state, orders.queues).get(job.spec.queue)
    return queue.priority if queue is not None else 0


def run_limit(job: Job, orders: OrderOptions) -> float | None:
    """How long a task of the job holds its node at most: its time limit, then the kill grace."""
    limit = job.spec.time_limit_s
    return float(limit) + orders.kill_grace_s if limit else None


def _cancel_if_hopeless(state: ControllerState, outcome: Outcome, job: Job, lookup: ProgressLookup,
                        busy: _BusyNames, pending: PendingIndices | None, now: float) -> JobWait | None:
    """What the job's dependencies say; None when they can never be met and the job was
    cancelled for it (its --kill-on-invalid-dep, yes by default)."""
    free = not job.dependencies.singleton or not busy.running_other_than(job)
    per_task = any(dependency.per_task for dependency in job.dependencies.on)
    indices = pending.first(pending.count) if per_task and pending is not None else []  # read only task by task
    wait = job_wait(job, indices, lookup, free)
    if wait.verdict is Verdict.NEVER and job.spec.kill_on_invalid_dep:
        cancel_for_dependency(state, outcome, job, wait.text, now)
        return None
    return wait


def output_path(job: Job, index: int, pattern: str, node: str = "%N") -> str:
    """Absolute in the job's working directory; relative when the job runs in a scratch
    directory of its own on the node (the execd resolves it there)."""
    path = expand(pattern, job_id=job.id, index=index, name=job.name, user=job.owner, node=node)
    return os.path.join(job.spec.workdir, path)


def queue_nice(state: ControllerState, job: Job, orders: OrderOptions) -> int:
    queue = queues_in_effect(state, orders.queues).get(job.spec.queue)
    return queue.nice if queue is not None else 0


def queue_of(state: ControllerState, job: Job, orders: OrderOptions) -> Queue | None:
    """The job's queue in effect (drover.toml's, with `drover queue set`'s changes)."""
    return queues_in_effect(state, orders.queues).get(job.spec.queue)


def start_order(job: Job, payload: JobPayload, attempt: Attempt, orders: OrderOptions, nice: int = 0,
                in_effect: Queue | None = None) -> StartAttempt:
    """The order that tells a node to run an attempt: everything its shepherd needs, composed of
    its parts, each made by one constructor below; `payload`: the job's script, environment and
    staged files, as the store holds them (Store.job_payloads); `nice`: its queue's; `in_effect`:
    its queue with the changes `drover queue set` made (its methods and notify time; drover.toml's
    without it). The job's spec goes whole: a new job option reaches the node with no line here."""
    config: AttemptOrder = {
        **identity_part(job, attempt, payload),
        **placement_part(job, attempt),
        **site_part(job, attempt, orders, nice, in_effect),
        "job": job_part(job),
    }
    stage_in = [File(f["name"], base64.b64decode(f["data"]), f["mode"]) for f in payload["stage_in"]]
    return StartAttempt(attempt.name, config, payload["script"], stage_in, attempt.after)


def job_part(job: Job) -> JobRecord:
    """The job's spec as the store holds it: every field, in its canonical encoding's values."""
    return msgspec.to_builtins(job.spec)  # type: ignore[no-any-return]  # JobRecord is generated from JobSpec


def identity_part(job: Job, attempt: Attempt, payload: JobPayload) -> AttemptIdentity:
    """Which attempt of which job, and its output files made of the spec's patterns here."""
    spec = job.spec
    ranges = job.indices.sorted_ranges()
    identity: AttemptIdentity = {
        "attempt": attempt.name,
        "job_id": job.id,
        "task_index": attempt.index,
        "attempt_number": attempt.number,
        "is_array": job.is_array,
        "array_first": ranges[0][0] if job.is_array else None,
        "array_last": max(last for _, last, _ in ranges) if job.is_array else None,
        "array_step": ranges[0][2] if job.is_array else None,
        "array_count": job.indices.count if job.is_array else None,
        "name": job.name,
        "owner": job.owner,
        "node": attempt.node,
        "priority": job.priority,
        "workdir": spec.workdir,
        "environment": payload["environment"],
        "stdout": output_path(job, attempt.index, spec.output, attempt.node),
        "stderr": output_path(job, attempt.index, spec.error, attempt.node) if spec.error else None,
    }
    if spec.done_output:  # jobd's doneoutput: the output in a file of its own once it is done
        identity["done_output"] = output_path(job, attempt.index, spec.done_output, attempt.node)
    return identity


def placement_part(job: Job, attempt: Attempt) -> Placement:
    """What the attempt holds: its CPUs and memory on its node, its devices, a parallel job's
    other hosts (its environment and slots are its spec's)."""
    placement: Placement = {
        "cpus": len(attempt.cpu_ids) or job.resources.cpus,  # an --exclusive task has all of its node's
        "cpu_ids": list(attempt.cpu_ids),
        "memory_mib": attempt.rooms(job.resources.memory_mib)[0][2],  # a parallel job's share on its master
    }
    if attempt.gres:
        placement["gres"] = {name: list(indices) for name, indices in attempt.gres.items()}
    if attempt.others:  # the pe_hostfile's other hosts (GE: "each involved host")
        placement["pe_hosts"] = [{"node": node, "cpu_ids": list(cpu_ids)} for node, cpu_ids in attempt.others]
    return placement


def site_part(job: Job, attempt: Attempt, orders: OrderOptions, nice: int, in_effect: Queue | None) -> SiteSettings:
    """The cluster's settings and the job's queue's, as the controller has them: the site's
    commands are named, never sent (execd/site_methods.py)."""
    spec = job.spec
    queue = orders.queues.get(spec.queue, NO_QUEUE_METHODS)
    site: SiteSettings = {"kill_grace_s": orders.kill_grace_s}
    if orders.exits.forbid_reschedule:
        site["forbid_reschedule"] = True
    if orders.exits.forbid_apperror:
        site["forbid_apperror"] = True
    if nice:
        site["queue_nice"] = nice
    if queue.enforce_cpu is not None:
        site["enforce_cpu"] = queue.enforce_cpu
    if queue.enforce_memory is not None:
        site["enforce_memory"] = queue.enforce_memory
    _add_site_methods(site, spec.queue, parallel_envs.of_job(job), orders, in_effect)
    settings: Queue | QueueSection = in_effect if in_effect is not None else queue
    if spec.notify:
        site["notify_s"] = settings.notify_s
    checkpoint = checkpoints.for_order(spec, job, attempt, orders.checkpoints)
    if checkpoint is not None:
        site["checkpoint"] = checkpoint
    return site


def _add_site_methods(site: SiteSettings, queue: str, pe_held: tuple[str, int] | None, orders: OrderOptions,
                      in_effect: Queue | None) -> None:
    """The site's commands are named, never sent: the node runs its own drover.toml's, and
    refuses the order if it lacks one named here (execd/site_methods.py). A queue method that
    `drover queue set` made a signal (or NONE) is sent as it is, in place of the site's."""
    pe = orders.parallel_environments.get(pe_held[0] if pe_held is not None else "")
    overrides = operator_signals(in_effect.record.settings if in_effect is not None else {})
    named = {key: sha for key, sha in configured_methods(orders.queues.get(queue), pe).items()
             if key.removeprefix("queue_") not in overrides}
    if named:
        site["site_methods"] = named
    if "suspend_method" in overrides:
        site["queue_suspend_method"] = overrides["suspend_method"]
    if "resume_method" in overrides:
        site["queue_resume_method"] = overrides["resume_method"]
    if "terminate_method" in overrides:
        site["queue_terminate_method"] = overrides["terminate_method"]
