"""The planner on plain data: order, placement, arrays, reasons, and properties that always hold."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.helpers.nodes import a_node

from drover.core.arrays import TaskIndices
from drover.core.node_state import NodeState
from drover.core.resources import Resources
from drover.scheduler.plan import plan
from drover.scheduler.reasons import PendingReason
from drover.scheduler.snapshot import NodeView, PendingIndices, PendingWork


def pending(job: int, cpus: int = 1, memory_mib: int = 0, priority: int = 0, submitted_at: float | None = None,
            array: tuple[int, int, int] | None = None, max_running: int | None = None, running: int = 0,
            requeued: tuple[int, ...] = (), fresh_from: int = 0, held: bool = False, met: bool = True,
            failed: bool = False, waiting_for: str = "", blocked: frozenset[int] = frozenset(),
            begin_at: float | None = None, name: str = "", singleton: bool = False) -> PendingWork:
    indices = TaskIndices((array,)) if array else TaskIndices()
    return PendingWork(job, "alice", priority, float(job) if submitted_at is None else submitted_at,
                       Resources(cpus, memory_mib), PendingIndices(requeued, indices, fresh_from, held),
                       running, max_running, met, failed, waiting_for, blocked, begin_at, name or f"job{job}",
                       singleton)


def started(result: object) -> list[tuple[int, int, str]]:
    return [(s.job, s.index, s.node) for s in result.starts]  # type: ignore[attr-defined]


def test_higher_priority_first_then_submission_order() -> None:
    result = plan([pending(1), pending(2, priority=5), pending(3)], [a_node(cpus=2, memory_mib=4096)], now=0)
    assert started(result) == [(2, 0, "n1"), (1, 0, "n1")]
    assert result.pending_reasons == {3: PendingReason.RESOURCES}


def test_a_job_that_does_not_fit_blocks_the_jobs_behind_it() -> None:
    result = plan([pending(1, cpus=2), pending(2, cpus=1)], [a_node(cpus=2, used_cpus=(0,), memory_mib=4096)], now=0)
    assert started(result) == []
    assert result.pending_reasons == {1: PendingReason.RESOURCES, 2: PendingReason.PRIORITY}


def test_jobs_waiting_for_dependencies_or_too_big_do_not_block_others() -> None:
    result = plan([pending(1, met=False), pending(2, failed=True, met=False), pending(3, cpus=64), pending(4)],
                  [a_node(cpus=2, memory_mib=4096)], now=0)
    assert started(result) == [(4, 0, "n1")]
    assert result.pending_reasons == {1: PendingReason.DEPENDENCY, 2: PendingReason.DEPENDENCY_NEVER_SATISFIED,
                                      3: PendingReason.TOO_BIG}


def test_no_node_up_means_nothing_starts() -> None:
    result = plan([pending(1)], [a_node(cpus=2, state=NodeState.DOWN, memory_mib=4096), a_node("n2", cpus=2, state=NodeState.DRAINED, memory_mib=4096)], now=0)
    assert started(result) == [] and result.pending_reasons == {1: PendingReason.NO_NODES}


def test_the_least_loaded_node_that_fits_then_name_order_with_the_lowest_free_cpus() -> None:
    nodes = [a_node("n2", cpus=4, memory_mib=4096), a_node("n1", cpus=4, used_cpus=(0, 2), memory_mib=1000)]
    result = plan([pending(1, cpus=2, memory_mib=600), pending(2, cpus=1, memory_mib=600),
                   pending(3, cpus=1, memory_mib=600)], nodes, now=0)
    # Job 1 takes the idle n2; then both are half used: n1 first by name, until its memory runs out.
    assert [(s.node, s.cpu_ids) for s in result.starts] == [("n2", (0, 1)), ("n1", (1,)), ("n2", (2,))]


def test_array_tasks_start_in_index_order_up_to_their_limit() -> None:
    result = plan([pending(1, array=(1, 9, 2), max_running=3, running=1)], [a_node(cpus=8, memory_mib=4096)], now=0)
    assert started(result) == [(1, 1, "n1"), (1, 3, "n1")]
    assert result.pending_reasons == {1: PendingReason.ARRAY_LIMIT}


def test_requeued_tasks_start_before_fresh_ones_and_held_fresh_ones_do_not_start() -> None:
    result = plan([pending(1, array=(1, 10, 1), requeued=(2,), fresh_from=4)], [a_node(cpus=3, memory_mib=4096)], now=0)
    assert started(result) == [(1, 2, "n1"), (1, 5, "n1"), (1, 6, "n1")]
    held = plan([pending(1, array=(1, 10, 1), requeued=(2,), fresh_from=4, held=True)], [a_node(cpus=3, memory_mib=4096)], now=0)
    assert started(held) == [(1, 2, "n1")]


def test_a_hundred_thousand_task_array_plans_only_what_fits() -> None:
    result = plan([pending(1, array=(1, 100_000, 1))], [a_node("n1", cpus=2, memory_mib=4096), a_node("n2", cpus=2, memory_mib=4096)], now=0)
    assert started(result) == [(1, 1, "n1"), (1, 2, "n2"), (1, 3, "n1"), (1, 4, "n2")]
    assert result.pending_reasons == {1: PendingReason.RESOURCES}


def test_a_job_waits_for_its_begin_time_and_the_plan_says_when_to_plan_again() -> None:
    work = [pending(1, begin_at=50.0), pending(2, begin_at=20.0), pending(3, begin_at=5.0)]
    result = plan(work, [a_node(cpus=4, memory_mib=4096)], now=10)
    assert started(result) == [(3, 0, "n1")]
    assert result.pending_reasons == {1: PendingReason.BEGIN_TIME, 2: PendingReason.BEGIN_TIME}
    assert result.details[2].startswith("waiting for its begin time, ") and result.wake_at == 20.0
    assert started(plan(work, [a_node(cpus=4, memory_mib=4096)], now=20)) == [(2, 0, "n1"), (3, 0, "n1")]


def test_the_reason_names_what_the_dependencies_wait_for() -> None:
    result = plan([pending(1, met=False, waiting_for="waiting for job 12 (afterok) to complete"),
                   pending(2, met=False, failed=True, waiting_for="job 9 (afterok) did not complete")],
                  [a_node(cpus=2, memory_mib=4096)], now=0)
    assert result.pending_reasons == {1: PendingReason.DEPENDENCY, 2: PendingReason.DEPENDENCY_NEVER_SATISFIED}
    assert result.details == {1: "waiting for job 12 (afterok) to complete", 2: "job 9 (afterok) did not complete"}


def test_array_tasks_whose_own_dependencies_wait_do_not_start() -> None:
    result = plan([pending(1, array=(1, 4, 1), blocked=frozenset({1, 3}), waiting_for="waiting for the same task")],
                  [a_node(cpus=8, memory_mib=4096)], now=0)
    assert started(result) == [(1, 2, "n1"), (1, 4, "n1")]
    assert result.pending_reasons == {1: PendingReason.DEPENDENCY}


def test_one_singleton_job_of_a_name_starts_in_a_pass() -> None:
    work = [pending(1, name="x", singleton=True), pending(2, name="x", singleton=True), pending(3, name="y",
                                                                                                singleton=True)]
    result = plan(work, [a_node(cpus=4, memory_mib=4096)], now=0)
    assert started(result) == [(1, 0, "n1"), (3, 0, "n1")]
    assert result.pending_reasons == {2: PendingReason.DEPENDENCY}


nodes_strategy = st.lists(
    st.builds(lambda i, cpus, mem, used, up: a_node(f"n{i}", cpus, mem, NodeState.UP if up else NodeState.DOWN,
                                                     tuple(range(min(used, cpus))), 0),
              st.integers(0, 9), st.integers(1, 8), st.integers(0, 8192), st.integers(0, 8), st.booleans()),
    max_size=4, unique_by=lambda n: n.name)
work_strategy = st.lists(
    st.builds(lambda job, cpus, mem, prio, size, limit, running, met, begin, blocked, name, singleton: pending(
        job, cpus, mem, prio, array=(1, size, 1) if size > 1 else None, max_running=limit, running=running, met=met,
        begin_at=begin, blocked=frozenset(blocked), name=name, singleton=singleton),
        st.integers(1, 50), st.integers(1, 4), st.integers(0, 4096), st.integers(-3, 3), st.integers(1, 20),
        st.one_of(st.none(), st.integers(1, 5)), st.integers(0, 3), st.booleans(),
        st.one_of(st.none(), st.floats(0, 20)), st.sets(st.integers(0, 20), max_size=5), st.sampled_from("ab"),
        st.booleans()),
    max_size=8, unique_by=lambda w: w.job)


@settings(max_examples=300, deadline=None)
@given(work_strategy, nodes_strategy)
def test_plans_never_overcommit_and_always_explain(work: list[PendingWork], nodes: list[NodeView]) -> None:
    result = plan(work, nodes, now=10)
    assert plan(work, nodes, now=10) == result  # deterministic
    by_node = {n.name: n for n in nodes}
    by_job = {w.job: w for w in work}
    for name, node in by_node.items():
        mine = [s for s in result.starts if s.node == name]
        if mine:
            assert node.state.accepts_work
        cpu_ids = [c for s in mine for c in s.cpu_ids]
        assert len(cpu_ids) == len(set(cpu_ids)) and set(cpu_ids) <= node.free_cpu_ids
        assert sum(by_job[s.job].resources.memory_mib for s in mine) <= node.free.memory_mib
        for s in mine:
            assert len(s.cpu_ids) == by_job[s.job].resources.cpus
    for item in work:
        mine = [s for s in result.starts if s.job == item.job]
        assert len(mine) <= item.pending.count
        assert len({s.index for s in mine}) == len(mine)
        if item.max_running is not None:
            assert len(mine) <= max(item.max_running - item.running_count, 0)
        if not item.dependencies_met or (item.begin_at is not None and item.begin_at > 10):
            assert not mine
        assert not {s.index for s in mine} & item.blocked
        if len(mine) < item.pending.count:
            assert item.job in result.pending_reasons
    singletons = {(by_job[s.job].owner, by_job[s.job].name, s.job) for s in result.starts if by_job[s.job].singleton}
    assert len({(owner, name) for owner, name, _ in singletons}) == len(singletons)  # one a name and owner
    waiting = [w.begin_at for w in work if result.pending_reasons.get(w.job) is PendingReason.BEGIN_TIME]
    assert result.wake_at == min(waiting, default=None)  # type: ignore[type-var]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 30), st.integers(1, 4)), min_size=1, max_size=4),
       st.integers(0, 80), st.lists(st.integers(0, 200), max_size=10), st.lists(st.integers(0, 200), max_size=5),
       st.booleans(), st.integers(0, 120))
def test_pending_indices_read_lazily_are_the_first_ones(ranges: list[tuple[int, int, int]], fresh_from: int,
                                                        skip: list[int], requeued: list[int], held: bool,
                                                        n: int) -> None:
    """A pass reads a job's pending indices one at a time (iterate) and stops when one does not
    fit; the indices it reads are those `first` lists, in the same order."""
    indices = TaskIndices(tuple((first, first + length, step) for first, length, step in ranges))
    pending = PendingIndices(tuple(requeued), indices, fresh_from, held, frozenset(skip))
    assert list(itertools.islice(pending.iterate(), n)) == pending.first(n)
