"""Nodes whose CPUs or memory changed under running work (a node daemon restarted offering fewer
or more than before, while the attempts it ran go on with what they were given): the planner
plans on what is really free, never raises, and never gives out what the node has not."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from drover.controller.handlers.dispatch import node_view
from drover.core.arrays import TaskIndices
from drover.core.node import Node
from drover.core.node_state import NodeState
from drover.core.resources import Resources
from drover.scheduler.plan import plan
from drover.scheduler.priority import Policy
from drover.scheduler.snapshot import PendingIndices, PendingWork, Release

NOW = 1000.0


def resized(name: str, before: int, after: int, memory_before: int, memory_after: int,
            attempts: list[tuple[int, int, float | None]]) -> tuple[Node, list[Release]]:
    """A node of `before` CPUs that started `attempts` (CPUs, MiB each, when each reaches its limit),
    then came back with `after` CPUs: the attempts keep their ids, some beyond the new count."""
    node = Node(name, before, memory_before, NodeState.UP, 0.0)
    releases = []
    for number, (cpus, memory_mib, ends) in enumerate(attempts):
        free = sorted(node.free_cpu_ids())
        if len(free) < cpus or memory_mib > node.free.memory_mib:
            continue
        node.take(tuple(free[:cpus]), memory_mib, holder=(number + 1, 0, 1))
        releases.append(Release(math.inf if ends is None else NOW + ends, Resources(cpus, memory_mib)))
    node.cpus, node.memory_mib = after, memory_after
    return node, releases


def work(number: int, cpus: int, memory_mib: int, tasks: int, limit: float | None) -> PendingWork:
    indices = TaskIndices(((1, tasks, 1),)) if tasks > 1 else TaskIndices()
    return PendingWork(number, "alice", 0, float(number), Resources(cpus, memory_mib), PendingIndices((), indices, 0),
                       name=f"job{number}", run_limit_s=limit)


attempts_strategy = st.lists(st.tuples(st.integers(1, 3), st.integers(0, 2048), st.one_of(st.none(),
                                                                                          st.floats(0, 300))),
                             max_size=6)
nodes_strategy = st.lists(
    st.tuples(st.integers(0, 5), st.integers(1, 12), st.integers(1, 12), st.integers(0, 8192), st.integers(0, 8192),
              attempts_strategy),
    min_size=1, max_size=4, unique_by=lambda spec: spec[0])
work_strategy = st.lists(
    st.builds(work, st.integers(1, 40), st.integers(1, 6), st.integers(0, 4096), st.integers(1, 6),
              st.one_of(st.none(), st.floats(1, 300))),
    min_size=1, max_size=8, unique_by=lambda item: item.job)


@settings(max_examples=400, deadline=None)
@given(work_strategy, nodes_strategy, st.booleans())
def test_a_node_shrunk_or_grown_under_running_attempts_is_planned_on_what_is_really_free(
        pending: list[PendingWork], specs: list[tuple[int, int, int, int, int, list[tuple[int, int, float | None]]]],
        backfill: bool) -> None:
    nodes = {f"n{i}": resized(f"n{i}", before, after, mem_before, mem_after, attempts)
             for i, before, after, mem_before, mem_after, attempts in specs}
    views = [node_view(node, releases) for node, releases in nodes.values()]
    result = plan(pending, views, NOW, Policy(backfill=backfill))  # never raises
    by_job = {item.job: item for item in pending}
    for name, (node, _) in nodes.items():
        mine = [start for start in result.starts if start.node == name]
        cpu_ids = [cpu for start in mine for cpu in start.cpu_ids]
        # Only ids the node has, none held by a running attempt, each once, and no more than the
        # node's count leaves beyond what the running attempts hold.
        assert len(cpu_ids) == len(set(cpu_ids))
        assert all(0 <= cpu < node.cpus for cpu in cpu_ids) and not set(cpu_ids) & node.used_cpu_ids
        assert len(cpu_ids) <= max(node.cpus - len(node.used_cpu_ids), 0)
        assert sum(by_job[start.job].resources.memory_mib for start in mine) <= \
            max(node.memory_mib - node.used_memory_mib, 0)
        for start in mine:
            assert len(start.cpu_ids) == by_job[start.job].resources.cpus
    reservation = result.reservation
    if reservation is None:
        return
    # At the reserved time, what still runs there (old attempts and the tasks started now, each
    # to its limit) leaves the reserved task room within the node's present count.
    node, releases = nodes[reservation.node]
    held = [(release.at, release.resources.cpus) for release in releases]
    for start in result.starts:
        if start.node == reservation.node:
            limit = by_job[start.job].run_limit_s
            held.append((math.inf if limit is None else NOW + limit, by_job[start.job].resources.cpus))
    busy = sum(cpus for ends, cpus in held if ends > reservation.at)
    assert node.cpus - busy >= reservation.resources.cpus


def test_a_node_back_with_fewer_cpus_than_its_attempts_hold_starts_nothing_until_they_end() -> None:
    """Eight CPUs, six one-CPU attempts, two of them ended (ids 0 and 1 free); back with two CPUs:
    four attempts run on a node of two, so nothing is free, though ids 0 and 1 are unheld."""
    node = Node("n1", 8, 8192, NodeState.UP, 0.0)
    for number in range(6):
        node.take((number,), 0, holder=(number + 1, 0, 1))
    for number in range(2):
        node.give_back((number,), 0, holder=(number + 1, 0, 1))
    node.cpus = 2
    assert node.free.cpus == 0 and node.free_cpu_ids() == frozenset() and node.overdrawn.cpus == 2
    jobs = [work(number, 1, 0, 1, None) for number in range(10, 15)]
    assert plan(jobs, [node_view(node)], NOW).starts == ()
    for number in range(2, 5):  # three of the four end: one CPU of the two is free again
        node.give_back((number,), 0, holder=(number + 1, 0, 1))
    (start,) = plan(jobs, [node_view(node)], NOW).starts
    assert start.cpu_ids == (0,)
    node.cpus = 8  # grown: ids 0-7 but 5, which the last attempt holds
    assert [len(start.cpu_ids) for start in plan(jobs, [node_view(node)], NOW).starts] == [1] * 5
    assert node.free_cpu_ids() == frozenset({0, 1, 2, 3, 4, 6, 7})
