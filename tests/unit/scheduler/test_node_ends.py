"""Nodes that go away (inside an outer scheduler's allocation, NodeView.ends_at): examples, and
the property that no task starts on one that it would outlast."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from drover.core.arrays import TaskIndices
from drover.core.node_state import NodeState
from drover.core.resources import Resources
from drover.scheduler.plan import Plan, plan
from drover.scheduler.reasons import PendingReason
from drover.scheduler.snapshot import NodeView, PendingIndices, PendingWork, Release, Succession

NOW = 1000.0


def node(name: str, cpus: int = 2, ends_at: float = math.inf,
         running: tuple[tuple[int, float], ...] = ()) -> NodeView:
    used = sum(c for c, _ in running)
    releases = tuple(Release(ends, Resources(c, 0)) for c, ends in running)
    return NodeView(name, NodeState.UP, Resources(cpus, 0), Resources(cpus - used, 0),
                    frozenset(range(used, cpus)), releases, running=len(running), ends_at=ends_at)


def job(number: int, limit: float | None, cpus: int = 1, tasks: int = 1) -> PendingWork:
    indices = TaskIndices(((1, tasks, 1),)) if tasks > 1 else TaskIndices()
    return PendingWork(number, "alice", 0, float(number), Resources(cpus, 0), PendingIndices((), indices, 0),
                       run_limit_s=limit)


def started(result: Plan) -> list[tuple[int, str]]:
    return [(s.job, s.node) for s in result.starts]


def test_a_job_starts_only_where_it_ends_before_the_node_goes() -> None:
    nodes = [node("slurm-1-0", ends_at=NOW + 100), node("slurm-2-0", ends_at=NOW + 1000)]
    result = plan([job(1, limit=500), job(2, limit=50)], nodes, NOW)
    assert started(result) == [(1, "slurm-2-0"), (2, "slurm-1-0")]


def test_a_job_that_outlasts_every_node_waits_and_holds_up_nothing() -> None:
    nodes = [node("slurm-1-0", cpus=1, ends_at=NOW + 100)]
    result = plan([job(1, limit=500), job(2, limit=None), job(3, limit=60)], nodes, NOW)
    assert started(result) == [(3, "slurm-1-0")]
    assert result.pending_reasons[1] == PendingReason.RESOURCES
    assert "before this job's time limit" in result.details[1]
    assert "without a time limit" in result.details[2]


def test_a_job_without_a_limit_goes_only_to_a_node_that_stays() -> None:
    nodes = [node("slurm-1-0", ends_at=NOW + 10_000), node("host", cpus=1)]
    result = plan([job(1, limit=None, tasks=2)], nodes, NOW)
    assert started(result) == [(1, "host")]
    assert result.pending_reasons[1] == PendingReason.RESOURCES


def test_no_reservation_on_a_node_the_job_would_outlast() -> None:
    # The reserved job could start at NOW+100 on the node, but would run until NOW+600, past its end.
    nodes = [node("slurm-1-0", cpus=1, ends_at=NOW + 300, running=((1, NOW + 100),)), node("host", cpus=1,
                                                                                            running=((1, NOW + 200),))]
    result = plan([job(1, limit=500)], nodes, NOW)
    assert result.reservation is not None and result.reservation.node == "host"


def test_a_node_that_goes_away_is_promised_to_no_one() -> None:
    # A running attempt ends at NOW+50 on a node that ends at NOW+1000: no task is promised its room.
    view = replace(node("slurm-1-0", cpus=1, ends_at=NOW + 1000, running=((1, NOW + 50),)),
                   successions=(Succession("5.0.1", (0,), 0, NOW + 50),))
    result = plan([job(1, limit=10)], [view], NOW, promises=True)
    assert result.starts == ()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.one_of(st.none(), st.floats(1, 5000))), min_size=1, max_size=6),
       st.lists(st.tuples(st.integers(1, 4), st.one_of(st.just(math.inf), st.floats(0, 5000)),
                          st.lists(st.tuples(st.integers(1, 2), st.floats(1, 5000)), max_size=2)),
                min_size=1, max_size=4),
       st.booleans())
def test_no_task_ever_starts_on_a_node_it_would_outlast(work: list[tuple[int, float | None]],
                                                       shapes: list[tuple[int, float, list[tuple[int, float]]]],
                                                       promises: bool) -> None:
    nodes = []
    for number, (cpus, ends, running) in enumerate(shapes):
        fitting = tuple((c, NOW + at) for c, at in running)
        while sum(c for c, _ in fitting) > cpus:
            fitting = fitting[1:]
        view = node(f"n{number}", cpus, NOW + ends if ends != math.inf else math.inf, fitting)
        successions = tuple(Succession(f"9.{i}.1", (i,), 0, at) for i, (_, at) in enumerate(fitting))
        nodes.append(replace(view, successions=successions))
    jobs = [job(number + 1, limit, cpus) for number, (cpus, limit) in enumerate(work)]
    result = plan(jobs, nodes, NOW, promises=promises)
    ends_at = {view.name: view.ends_at for view in nodes}
    limits = {item.job: item.run_limit_s for item in jobs}
    for start in result.starts:
        limit = limits[start.job]
        task_ends = math.inf if limit is None else NOW + limit
        assert task_ends <= ends_at[start.node], (start, ends_at)
    if result.reservation is not None:
        limit = limits[result.reservation.job]
        reserved_ends = math.inf if limit is None else result.reservation.at + limit
        assert reserved_ends <= ends_at[result.reservation.node]
