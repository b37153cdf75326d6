"""Promises on plain data: a task that cannot start now is given the room of an attempt still
running, in the planner's order and within its limits, one task behind each attempt, never a
task that needs devices or a node of its own, and never where it could start now."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.helpers.nodes import a_node
from tests.unit.scheduler.test_planner import pending

from drover.core.constraints import parse_constraint
from drover.core.gres import GresNeed
from drover.core.resources import Resources
from drover.scheduler.plan import Ranking, plan
from drover.scheduler.priority import Policy, Weigher, Weights
from drover.scheduler.reasons import PendingReason
from drover.scheduler.snapshot import NodeView, QueueView, Stranded, Succession

NOW = 1000.0


def full_node(name: str = "n1", attempts: tuple[Succession, ...] = ()) -> NodeView:
    """A node of 2 CPUs, each held by one running attempt (or as `attempts` say)."""
    attempts = attempts or (Succession(f"{name}-a.0.1", (0,), 512, math.inf),
                            Succession(f"{name}-b.0.1", (1,), 512, NOW + 60))
    node = a_node(name, cpus=2, memory_mib=1024, used_cpus=(0, 1), used_memory_mib=1024)
    return dataclasses.replace(node, successions=attempts)


def test_a_task_that_cannot_start_follows_the_attempt_that_ends_first() -> None:
    decided = plan([pending(1), pending(2), pending(3)], [full_node()], NOW, promises=True)
    assert [(s.job, s.node, s.cpu_ids, s.after) for s in decided.starts] == [
        (1, "n1", (1,), "n1-b.0.1"), (2, "n1", (0,), "n1-a.0.1")]
    assert decided.pending_reasons[3] is PendingReason.RESOURCES


def test_no_promise_without_the_setting_or_where_a_task_can_start_now() -> None:
    assert plan([pending(1)], [full_node()], NOW).starts == ()
    free = dataclasses.replace(a_node("n2", cpus=2), successions=full_node().successions)
    (start,) = plan([pending(1)], [free], NOW, promises=True).starts
    assert start.after is None


def test_a_task_bigger_than_the_room_it_would_follow_is_not_promised() -> None:
    decided = plan([pending(1, cpus=2), pending(2)], [full_node()], NOW, promises=True)
    assert decided.starts == ()  # the first in order waits, and the one behind it does not pass it
    decided = plan([pending(1, memory_mib=600)], [full_node()], NOW, promises=True)
    assert decided.starts == ()


def test_the_highest_priority_is_promised_first() -> None:
    decided = plan([pending(1), pending(2, priority=10)], [full_node(attempts=(Succession("x.0.1", (0,), 512, 1e9),))],
                   NOW, promises=True)
    assert [(s.job, s.after) for s in decided.starts] == [(2, "x.0.1")]


def test_tasks_that_need_devices_or_a_node_of_their_own_are_never_promised() -> None:
    gpu = dataclasses.replace(pending(1), gres=(GresNeed("gpu", None, 1),))
    whole = dataclasses.replace(pending(2), exclusive=True)
    assert plan([gpu], [full_node()], NOW, promises=True).starts == ()
    assert plan([whole], [full_node()], NOW, promises=True).starts == ()


def test_a_promise_counts_against_the_queues_limit() -> None:
    queue = QueueView("default", max_running=2, running=1)
    decided = plan([pending(1, array=(1, 3, 1))], [full_node()], NOW, promises=True, queues={"default": queue})
    assert len(decided.starts) == 1


@given(st.lists(st.integers(min_value=1, max_value=2), min_size=1, max_size=8),
       st.lists(st.tuples(st.integers(min_value=1, max_value=2), st.floats(min_value=1, max_value=1e6)),
                min_size=1, max_size=4))
def test_each_attempt_is_followed_once_and_only_by_a_task_that_fits(sizes: list[int],
                                                                   attempts: list[tuple[int, float]]) -> None:
    successions, next_cpu = [], 0
    for number, (cpus, ends) in enumerate(attempts):
        successions.append(Succession(f"{number}.0.1", tuple(range(next_cpu, next_cpu + cpus)), 256 * cpus, NOW + ends))
        next_cpu += cpus
    node = dataclasses.replace(a_node("n1", cpus=next_cpu, memory_mib=256 * next_cpu, used_cpus=tuple(range(next_cpu)),
                                      used_memory_mib=256 * next_cpu), successions=tuple(successions))
    decided = plan([pending(job, cpus=cpus, memory_mib=200 * cpus) for job, cpus in enumerate(sizes, 1)], [node], NOW,
                   promises=True)
    followed = [start.after for start in decided.starts]
    assert len(followed) == len(set(followed)) and all(followed)
    by_name = {succession.attempt: succession for succession in successions}
    for start in decided.starts:
        assert set(start.cpu_ids) <= set(by_name[start.after].cpu_ids)  # type: ignore[index]
    # In order: a task is promised only if every task before it that could ever run there was
    # (one bigger than the node waits as too big, and blocks no one).
    could_run = [job for job, cpus in enumerate(sizes, 1) if cpus <= next_cpu]
    promised_jobs = [start.job for start in decided.starts]
    assert promised_jobs == could_run[:len(promised_jobs)]


def test_a_task_may_follow_one_this_same_pass_starts() -> None:
    decided = plan([pending(1, array=(1, 3, 1))], [a_node("n1", cpus=1)], NOW, promises=True)
    first, second = decided.starts
    assert (first.after, first.after_start) == (None, None)
    assert (second.after, second.after_start, second.cpu_ids) == (None, (1, 1), first.cpu_ids)
    assert decided.pending_reasons[1] is PendingReason.RESOURCES  # one promise a slot: the third waits


def stranded(job: int, node: str = "n1", submitted_at: float | None = None) -> Stranded:
    """A promised task of one CPU whose room is free beside it on `node`."""
    return Stranded(job, 0, node, Resources(1, 0), "alice", 0, float(job) if submitted_at is None else submitted_at)


def one_free_cpu() -> NodeView:
    """Two CPUs, the first held by the attempt a promise follows, the second free."""
    return a_node("n1", cpus=2, used_cpus=(0,))


def test_a_stranded_promise_takes_the_free_room_when_no_job_before_it_waits_for_room() -> None:
    decided = plan([pending(5)], [one_free_cpu()], NOW, promises=True, stranded=[stranded(3)])
    assert [(s.job, s.node, s.cpu_ids) for s in decided.in_place] == [(3, "n1", (1,))]
    assert decided.starts == () and decided.pending_reasons[5] is PendingReason.RESOURCES  # ranked after it


def test_a_job_before_a_stranded_promise_that_can_start_now_takes_the_room_first() -> None:
    decided = plan([pending(2)], [one_free_cpu()], NOW, promises=True, stranded=[stranded(3)])
    assert [(s.job, s.cpu_ids) for s in decided.starts] == [(2, (1,))]
    assert decided.in_place == ()


def test_a_stranded_promise_waits_behind_a_job_before_it_that_waits_for_room() -> None:
    decided = plan([pending(2, cpus=2)], [one_free_cpu()], NOW, promises=True, stranded=[stranded(3)])
    assert decided.in_place == () and decided.pending_reasons[2] is PendingReason.RESOURCES


def test_what_holds_a_job_before_a_stranded_promise_is_asked_of_this_pass() -> None:
    """A job before it that this pass finds cannot start (its dependency, its array's limit,
    its begin time) does not keep the room from it; the same job, free now, takes it."""
    for held in (pending(2, met=False), pending(2, array=(1, 4, 1), max_running=1, running=1),
                 pending(2, begin_at=NOW + 60)):
        decided = plan([held], [one_free_cpu()], NOW, promises=True, stranded=[stranded(3)])
        assert [s.job for s in decided.in_place] == [3] and decided.starts == ()
    for free in (pending(2), pending(2, array=(1, 4, 1), max_running=2, running=1), pending(2, begin_at=NOW)):
        decided = plan([free], [one_free_cpu()], NOW, promises=True, stranded=[stranded(3)])
        assert decided.in_place == () and [s.job for s in decided.starts] == [2]


def test_a_stranded_promise_ranks_before_the_waiting_tasks_of_its_own_job() -> None:
    decided = plan([pending(3, array=(1, 4, 1))], [one_free_cpu()], NOW, promises=True, stranded=[stranded(3)])
    assert [s.job for s in decided.in_place] == [3] and decided.starts == ()


def test_a_stranded_promise_is_placed_by_the_multifactor_order_not_the_plain_one() -> None:
    """With fair share weighed, a promise of an owner who has used nothing ranks before an
    earlier job of an owner who has used much: it takes the room, which that job would take in
    the plain order."""
    bobs = dataclasses.replace(stranded(3), owner="bob")
    decided = plan([pending(2)], [one_free_cpu()], NOW, promises=True, stranded=[bobs])
    assert decided.in_place == () and [s.job for s in decided.starts] == [2]
    policy = Policy(Weights(fairshare=1000.0), usage={"alice": 1e6})
    decided = plan([pending(2)], [one_free_cpu()], NOW, policy, promises=True, stranded=[bobs])
    assert [s.job for s in decided.in_place] == [3] and decided.starts == ()


def reserved_elsewhere() -> list[NodeView]:
    """n1: 4 CPUs all busy until NOW + 100, which job 1 of 4 CPUs reserves; n2: the promise's node,
    CPU 0 held by the long attempt it follows, CPU 1 free."""
    n1 = a_node("n1", cpus=4, running=((4, 0, frozenset(), NOW + 100, False),))
    return [n1, a_node("n2", cpus=2, used_cpus=(0,))]


def test_a_reservation_on_another_node_does_not_keep_a_stranded_promise_from_its_room() -> None:
    """A job after the promise backfills onto any node but the reserved one; the promise, before
    it, takes the room beside it first, as a start would."""
    decided = plan([pending(1, cpus=4), pending(5)], reserved_elsewhere(), NOW, promises=True,
                   stranded=[stranded(3, node="n2")])
    assert decided.reservation is not None and decided.reservation.node == "n1"
    assert [(s.job, s.node, s.cpu_ids) for s in decided.in_place] == [(3, "n2", (1,))]
    assert decided.starts == () and decided.pending_reasons[5] is PendingReason.RESOURCES  # no room left for it


def test_a_stranded_promise_on_the_reserved_node_takes_its_room_only_as_a_backfilled_start_would() -> None:
    """On the reserved node, a promise that would still run at the reservation's start takes only
    what the reserved job leaves there then; one that ends by then takes the room."""
    node = a_node("n1", cpus=4, running=((2, 0, frozenset(), NOW + 100, False),
                                         (1, 0, frozenset(), math.inf, False)))  # CPU 3 free
    long, short = (dataclasses.replace(stranded(3), run_limit_s=limit) for limit in (None, 50.0))
    decided = plan([pending(1, cpus=3)], [node], NOW, promises=True, stranded=[long])
    assert decided.reservation is not None and decided.reservation.node == "n1"
    assert decided.in_place == ()  # it would run on past NOW + 100, on the CPU job 1 needs then
    decided = plan([pending(1, cpus=3)], [node], NOW, promises=True, stranded=[short])
    assert [(s.job, s.cpu_ids) for s in decided.in_place] == [(3, (3,))]
    decided = plan([pending(1, cpus=2)], [node], NOW, promises=True, stranded=[long])
    assert [(s.job, s.cpu_ids) for s in decided.in_place] == [(3, (3,))]  # job 1 leaves a CPU spare there
    assert decided.pending_reasons[1] is PendingReason.RESERVED


def test_a_stranded_promise_does_not_start_in_place_where_a_start_would_not() -> None:
    """On a node that goes away before it would end, of a queue stopped or outside its time
    window, on a node its queue no longer runs on or whose features no longer match: it stays
    promised, as a job would wait there."""
    going = dataclasses.replace(one_free_cpu(), ends_at=NOW + 100)
    for limit, moves in ((None, False), (200.0, False), (50.0, True)):
        decided = plan([], [going], NOW, promises=True, stranded=[dataclasses.replace(stranded(3), run_limit_s=limit)])
        assert [s.job for s in decided.in_place] == ([3] if moves else [])
    of_q = dataclasses.replace(stranded(3), queue="q")
    for queue, moves in ((QueueView("q", starting=False), False), (QueueView("q", opens_at=NOW + 60), False),
                         (QueueView("q", nodes=frozenset({"n2"})), False), (QueueView("q"), True)):
        decided = plan([], [one_free_cpu()], NOW, promises=True, stranded=[of_q], queues={"q": queue})
        assert [s.job for s in decided.in_place] == ([3] if moves else [])
    featured = dataclasses.replace(stranded(3), constraint=parse_constraint("fast"))
    assert plan([], [one_free_cpu()], NOW, promises=True, stranded=[featured]).in_place == ()
    fast = dataclasses.replace(one_free_cpu(), features=frozenset({"fast"}))
    assert [s.job for s in plan([], [fast], NOW, promises=True, stranded=[featured]).in_place] == [3]


def test_each_job_is_weighed_once_a_pass_with_stranded_promises(monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk places the claims by the keys its sort made: weighing is not done again for each
    job it walks (it runs over every pending job, every pass)."""
    calls = 0
    weigh = Weigher.factors

    def counted(self: Weigher, *args: Any) -> Any:
        nonlocal calls
        calls += 1
        return weigh(self, *args)

    monkeypatch.setattr(Weigher, "factors", counted)
    late = dataclasses.replace(stranded(3), priority=-10)  # ranked after every job: the walk passes them all
    work = [pending(job, cpus=2) for job in range(10, 30)]
    decided = plan(work, [one_free_cpu()], NOW, Policy(Weights(age=1.0)), promises=True, stranded=[late])
    assert calls == len(work) + 1
    assert decided.in_place == ()  # the first job waits for room: the order is blocked before it
    calls = 0
    held = [pending(job, met=False) for job in range(10, 30)]  # none starts, none blocks the order
    decided = plan(held, [one_free_cpu()], NOW, Policy(Weights(age=1.0)), promises=True, stranded=[late])
    assert calls == len(held) + 1
    assert [s.job for s in decided.in_place] == [3]


def test_a_stranded_promise_of_another_owner_does_not_change_the_order_of_the_others() -> None:
    """Fair share is weighed over the owners of the pending work, as in a pass without the
    promise: carol's promise does not lower alice's and bob's factors. Over alice and bob, alice
    (priority 800, fair share 0.25) ranks before bob (1.0): 1050 against 1000; over carol too,
    alice's factor would be 0.125, and bob would start first."""
    policy = Policy(Weights(fairshare=1000.0), usage={"alice": 1.0})
    alices = dataclasses.replace(pending(2, priority=800), owner="alice")
    bobs = dataclasses.replace(pending(1), owner="bob")
    carols = dataclasses.replace(stranded(3, node="n2"), owner="carol")
    nodes = [a_node("n1", cpus=1), a_node("n2", cpus=1, used_cpus=(0,))]  # no room beside carol's promise
    alone = plan([alices, bobs], nodes, NOW, policy)
    beside = plan([alices, bobs], nodes, NOW, policy, stranded=[carols])
    assert [s.job for s in alone.starts] == [s.job for s in beside.starts] == [2]
    assert beside.in_place == ()


def test_the_pass_orders_by_the_ranking_it_is_given() -> None:
    """The controller makes one Ranking a pass and gives it to the planner and to what takes a
    promise back: the planner's order is that Ranking's, whatever owners it was made over."""
    policy = Policy(Weights(fairshare=1000.0), usage={"alice": 1.0})
    alices = dataclasses.replace(pending(2, priority=800), owner="alice")
    bobs = dataclasses.replace(pending(1), owner="bob")
    nodes = [a_node("n1", cpus=1)]
    assert [s.job for s in plan([alices, bobs], nodes, NOW, policy).starts] == [2]
    wider = Ranking(policy, {"alice", "bob", "carol"}, NOW)
    assert [s.job for s in plan([alices, bobs], nodes, NOW, policy, rank=wider).starts] == [1]
    assert wider(bobs) == wider.of("bob", 0, 0, bobs.submitted_at, 1) < wider(alices)
