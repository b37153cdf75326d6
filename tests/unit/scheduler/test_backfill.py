"""Multifactor priority and EASY backfill: examples, and properties that always hold."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from drover.core.arrays import TaskIndices
from drover.core.node_state import NodeState
from drover.core.resources import Resources
from drover.scheduler.plan import Plan, plan
from drover.scheduler.priority import Policy, Weigher, Weights
from drover.scheduler.reasons import PendingReason
from drover.scheduler.snapshot import NodeView, PendingIndices, PendingWork, Release

NOW = 1000.0


def node(name: str = "n1", cpus: int = 4, memory_mib: int = 0,
         running: tuple[tuple[int, float | None], ...] = ()) -> NodeView:
    """A node with tasks running on it: (their CPUs, when they reach their limit; None: no limit)."""
    used = sum(c for c, _ in running)
    releases = tuple(Release(math.inf if ends is None else ends, Resources(c, 0)) for c, ends in running)
    return NodeView(name, NodeState.UP, Resources(cpus, memory_mib), Resources(cpus - used, memory_mib),
                    frozenset(range(used, cpus)), releases)


def job(number: int, cpus: int = 1, limit: float | None = None, priority: int = 0, owner: str = "alice",
        submitted_at: float | None = None, queue_priority: int = 0, tasks: int = 1) -> PendingWork:
    indices = TaskIndices(((1, tasks, 1),)) if tasks > 1 else TaskIndices()
    return PendingWork(number, owner, priority, float(number) if submitted_at is None else submitted_at,
                       Resources(cpus, 0), PendingIndices((), indices, 0), name=f"job{number}",
                       queue_priority=queue_priority, run_limit_s=limit)


def started(result: Plan) -> list[tuple[int, str]]:
    return [(s.job, s.node) for s in result.starts]


def test_a_short_job_is_backfilled_ahead_of_the_reserved_one() -> None:
    nodes = [node("n1", 4, running=((2, NOW + 100),))]
    result = plan([job(1, cpus=4), job(2, cpus=1, limit=50), job(3, cpus=1, limit=500)], nodes, NOW)
    assert started(result) == [(2, "n1")]
    assert result.reservation is not None and result.reservation.at == NOW + 100
    assert result.pending_reasons == {1: PendingReason.RESERVED, 3: PendingReason.PRIORITY}
    assert result.details[1].startswith("reserved: starts by ") and result.details[1].endswith(" on n1")
    assert "would delay job 1" in result.details[3]
    assert result.backfilled == (2,)


def test_a_long_job_may_use_other_nodes_or_what_the_reservation_leaves() -> None:
    nodes = [node("n1", 4, running=((3, NOW + 100),)), node("n2", 2, running=((2, None),)),
             node("n3", 1)]
    result = plan([job(1, cpus=3), job(2, cpus=1, limit=500), job(3, cpus=1)], nodes, NOW)
    # Job 2 goes to the least-loaded node, n3. n1 has 1 CPU now, 4 at NOW+100: the reserved job
    # needs 3, so 1 CPU may stay busy past then, and job 3 (no limit) may take it.
    assert started(result) == [(2, "n3"), (3, "n1")]
    assert result.pending_reasons == {1: PendingReason.RESERVED}


def test_without_time_limits_order_stays_strict() -> None:
    nodes = [node("n1", 4, running=((3, None),))]
    result = plan([job(1, cpus=4), job(2, cpus=1, limit=5)], nodes, NOW)
    assert started(result) == [] and result.reservation is None
    assert result.pending_reasons == {1: PendingReason.RESOURCES, 2: PendingReason.PRIORITY}


def test_backfill_can_be_turned_off() -> None:
    nodes = [node("n1", 4, running=((3, NOW + 100),))]
    result = plan([job(1, cpus=4), job(2, cpus=1, limit=50)], nodes, NOW, Policy(backfill=False))
    assert started(result) == []
    assert result.pending_reasons == {1: PendingReason.RESOURCES, 2: PendingReason.PRIORITY}


def test_the_default_weights_keep_job_priority_then_submission_order() -> None:
    nodes = [node("n1", 3)]
    work = [job(1, owner="bob", queue_priority=5), job(2, priority=5, submitted_at=NOW), job(3), job(4)]
    assert started(plan(work, nodes, NOW, Policy(usage={"bob": 1e9}, max_queue_priority=10))) == [
        (2, "n1"), (1, "n1"), (3, "n1")]


def test_age_queue_and_fair_share_weigh_as_configured() -> None:
    weights = Weights(age=1000, fairshare=10_000, queue=100, job=1, max_age_s=1000)
    policy = Policy(weights, usage={"alice": 300.0, "bob": 100.0}, shares={"alice": 1, "bob": 1},
                    max_queue_priority=10)
    weigher = Weigher(policy, ["alice", "bob"], NOW)
    alice = weigher.factors("alice", 0, 10, NOW - 500)
    assert (alice.age, alice.queue, alice.job) == (0.5, 1.0, 0)
    assert math.isclose(alice.fairshare, 2 ** -1.5)  # 3/4 of the usage on 1/2 of the shares
    assert math.isclose(alice.total, 500 + 10_000 * 2 ** -1.5 + 100)
    bob = weigher.factors("bob", -10, 0, NOW)
    assert math.isclose(bob.total, 10_000 * 2 ** -0.5 - 10)
    nodes = [node("n1", 1)]
    result = plan([job(1, owner="alice", queue_priority=10, submitted_at=NOW - 500),
                   job(2, owner="bob", priority=-10, submitted_at=NOW)], nodes, NOW, policy)
    assert started(result) == [(2, "n1")]  # bob's lighter use outweighs alice's age and queue
    assert weigher.factors("carol", 0, 0, NOW).fairshare == 1.0  # no use yet


# -- properties -------------------------------------------------------------------------------

running_strategy = st.lists(st.tuples(st.integers(1, 3), st.one_of(st.none(), st.floats(0, 200))), max_size=4)
nodes_strategy = st.lists(
    st.builds(lambda i, cpus, running: node(f"n{i}", cpus, running=_fit(tuple((c, None if e is None else NOW + e)
                                                                           for c, e in running), cpus)),
              st.integers(0, 5), st.integers(1, 8), running_strategy),
    min_size=1, max_size=4, unique_by=lambda n: n.name)
work_strategy = st.lists(
    st.builds(lambda number, cpus, limit, priority, tasks: job(number, cpus, limit, priority, tasks=tasks),
              st.integers(1, 40), st.integers(1, 6), st.one_of(st.none(), st.floats(1, 300)),
              st.integers(-2, 2), st.integers(1, 4)),
    max_size=8, unique_by=lambda w: w.job)


def _fit(running: tuple[tuple[int, float | None], ...], cpus: int) -> tuple[tuple[int, float | None], ...]:
    kept, used = [], 0
    for c, ends in running:
        if used + c <= cpus:
            kept.append((c, ends))
            used += c
    return tuple(kept)


@settings(max_examples=400, deadline=None)
@given(work_strategy, nodes_strategy)
def test_backfill_never_overcommits_nor_delays_the_reserved_job(work: list[PendingWork],
                                                                nodes: list[NodeView]) -> None:
    result = plan(work, nodes, NOW)
    by_job = {w.job: w for w in work}
    for view in nodes:
        mine = [s for s in result.starts if s.node == view.name]
        cpu_ids = [c for s in mine for c in s.cpu_ids]
        assert len(cpu_ids) == len(set(cpu_ids)) and set(cpu_ids) <= view.free_cpu_ids
    reservation = result.reservation
    if reservation is None:
        return
    assert result.pending_reasons[reservation.job] is PendingReason.RESERVED
    assert not any(s.job == reservation.job for s in result.starts) or by_job[reservation.job].pending.count > 1
    # Every task on the reserved node, old or started now, runs to its limit: at the reserved
    # time, what is still held leaves room for the reserved task.
    view = next(v for v in nodes if v.name == reservation.node)
    held = [(release.at, release.resources.cpus) for release in view.releases]
    for s in result.starts:
        if s.node == view.name:
            limit = by_job[s.job].run_limit_s
            held.append((math.inf if limit is None else NOW + limit, by_job[s.job].resources.cpus))
    busy = sum(cpus for ends, cpus in held if ends > reservation.at)
    assert view.total.cpus - busy >= reservation.resources.cpus
    assert reservation.at < math.inf and reservation.at >= NOW


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.floats(1, 50), st.floats(0, 1)), min_size=1, max_size=30),
       st.integers(2, 6))
def test_a_wide_job_is_not_starved_by_a_stream_of_narrow_ones(narrow: list[tuple[int, float, float]],
                                                              cpus: int) -> None:
    """A job wanting a whole node waits behind running narrow jobs, while more keep coming; every
    task runs for a fraction of its limit. The wide job starts by its first reservation."""
    now = NOW
    running: list[tuple[int, float, float]] = [(1, now + 40, now + 40)]  # (cpus, limit's end, real end)
    wide = job(1, cpus=cpus, limit=100, submitted_at=0)
    queue = [wide]
    promised: float | None = None
    for step, (c, limit, fraction) in enumerate(narrow):
        queue.append(job(step + 2, cpus=min(c, cpus), limit=limit, submitted_at=step + 1))
        used = sum(r[0] for r in running)
        view = NodeView("n1", NodeState.UP, Resources(cpus, 0), Resources(cpus - used, 0),
                        frozenset(range(used, cpus)), tuple(Release(r[1], Resources(r[0], 0)) for r in running))
        result = plan(queue, [view], now)
        assert promised is None or now <= promised
        for s in result.starts:
            if s.job == 1:
                assert promised is None or now <= promised
                return
            started_job = next(w for w in queue if w.job == s.job)
            assert started_job.run_limit_s is not None
            running.append((started_job.resources.cpus, now + started_job.run_limit_s,
                            now + fraction * started_job.run_limit_s))
        if result.reservation is not None and result.reservation.job == 1 and promised is None:
            promised = result.reservation.at
        assert promised is not None  # the running tasks all have limits: a reservation is made at once
        startedids = {s.job for s in result.starts}
        queue = [w for w in queue if w.job not in startedids]
        if running:  # the next task ends (at its real end, never past its limit)
            first = min(running, key=lambda r: r[2])
            now = max(now, first[2])
            running.remove(first)
    # the stream ran out: the wide job still starts once everything else has ended
    while running:
        now = max(now, max(r[2] for r in running))
        running = []
    result = plan([w for w in queue if w.job == 1], [node("n1", cpus)], now)
    assert started(result) == [(1, "n1")]
    assert promised is not None and now <= promised


def test_multifactor_order_is_deterministic_and_never_mutates() -> None:
    work = [job(n, owner="ab"[n % 2], submitted_at=NOW - n) for n in range(1, 6)]
    before = [replace(w) for w in work]
    policy = Policy(Weights(age=10, fairshare=10), usage={"a": 5})
    assert plan(work, [node("n1", 2)], NOW, policy) == plan(work, [node("n1", 2)], NOW, policy)
    assert work == before


def test_fair_share_converges_to_the_configured_shares() -> None:
    """A simulation, not wall-clock: alice (2 shares) and bob (1) each keep 20 one-CPU jobs of
    100 s waiting on 8 CPUs, bob's submitted first. With fair share weighing most, the CPU time
    each gets over a long run comes to their shares (2:1), whoever asked first (without fair
    share, the order of submission gives them 1:1)."""
    from drover.controller.handlers.fairshare import DecayedUsage

    usage = DecayedUsage(half_life_s=3600.0)
    shares = {"alice": 2.0, "bob": 1.0}
    weights = Weights(age=0, fairshare=1000, queue=0, job=1)
    running: list[tuple[str, float]] = []  # (owner, ends at)
    got = {"alice": 0.0, "bob": 0.0}
    number, now = 0, 0.0
    waiting: list[PendingWork] = []
    for _ in range(600):  # 600 steps of 10 s: 100 minutes
        for owner in ("bob", "alice"):
            while sum(1 for w in waiting if w.owner == owner) < 20:
                number += 1
                waiting.append(job(number, owner=owner, submitted_at=now))
        used = {owner: sum(1 for o, _ in running if o == owner) * 10.0 for owner in got}
        current = usage.at(now)
        for owner, seconds in used.items():  # what runs counts as it runs, as the dispatcher counts it
            current[owner] = current.get(owner, 0.0) + seconds
        free = 8 - len(running)
        result = plan(waiting, [node("n1", free)] if free else [], now, Policy(weights, current, shares))
        for start in result.starts:
            started_job = next(w for w in waiting if w.job == start.job)
            waiting.remove(started_job)
            running.append((started_job.owner, now + 100))
        now += 10
        for owner, ends in list(running):
            got[owner] += 10
            if ends <= now:
                running.remove((owner, ends))
                usage.add(owner, 100.0, now)
    assert 1.8 <= got["alice"] / got["bob"] <= 2.2, got
