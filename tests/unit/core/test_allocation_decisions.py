"""When the allocator asks an outer scheduler for allocations, how many, how long it waits after
failures, and which allocations it gives back: core/allocations.py on plain data."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drover.core.allocations import (
    BACKOFF_FIRST_S,
    BACKOFF_MAX_S,
    Allocation,
    AllocationState,
    AllocQueue,
    IdleWatch,
    QueueParams,
    Waiting,
    backoff_s,
    demand,
    failed,
    idle_allocations,
    parse_duration,
    submissions,
    succeeded,
)

NOW = 10_000.0


def queue(**given: object) -> AllocQueue:
    return AllocQueue(1, replace(QueueParams(), **given), 0.0, "alice")  # type: ignore[arg-type]


def alloc(outer_id: str, state: AllocationState, workers: int = 1, queue_id: int = 1) -> Allocation:
    return Allocation(queue_id, outer_id, workers, state, NOW - 10)


def test_nothing_is_asked_for_while_no_task_waits() -> None:
    assert submissions(queue(backlog=4, max_workers=8), [], 0, NOW) == 0


def test_the_backlog_bounds_the_allocations_waiting_in_the_outer_queue() -> None:
    q = queue(backlog=2, max_workers=10)
    assert submissions(q, [], 50, NOW) == 2
    assert submissions(q, [alloc("1", AllocationState.QUEUED)], 50, NOW) == 1
    assert submissions(q, [alloc("1", AllocationState.QUEUED), alloc("2", AllocationState.QUEUED)], 50, NOW) == 0


def test_the_most_workers_bounds_queued_and_running_allocations_together() -> None:
    q = queue(backlog=5, max_workers=2)
    assert submissions(q, [], 200, NOW) == 2
    assert submissions(q, [alloc("1", AllocationState.RUNNING)], 200, NOW) == 1
    running = [alloc("1", AllocationState.RUNNING), alloc("2", AllocationState.RUNNING)]
    assert submissions(q, running, 200, NOW) == 0
    # Ended allocations and other queues' allocations count for nothing.
    others = [alloc("3", AllocationState.ENDED), alloc("4", AllocationState.RUNNING, queue_id=2)]
    assert submissions(q, others, 200, NOW) == 2


def test_several_workers_an_allocation() -> None:
    q = queue(backlog=5, max_workers=5, workers_per_alloc=2)
    assert submissions(q, [], 200, NOW) == 2  # 4 workers; a third allocation would make 6
    assert submissions(q, [], 3, NOW) == 2  # 3 tasks need 2 allocations of 2
    assert submissions(q, [], 1, NOW) == 1


def test_no_more_allocations_than_the_waiting_tasks_could_use() -> None:
    q = queue(backlog=5, max_workers=10)
    assert submissions(q, [], 1, NOW) == 1
    assert submissions(q, [alloc("1", AllocationState.QUEUED)], 1, NOW) == 0


def test_a_paused_or_removed_queue_or_one_backing_off_asks_for_nothing() -> None:
    q = queue(backlog=2, max_workers=2)
    assert submissions(replace(q, paused=True), [], 10, NOW) == 0
    assert submissions(replace(q, removed=True), [], 10, NOW) == 0
    assert submissions(replace(q, backoff_until=NOW + 1), [], 10, NOW) == 0
    assert submissions(replace(q, backoff_until=NOW), [], 10, NOW) == 2


def test_demand_counts_only_tasks_whose_limit_ends_before_the_allocation_does() -> None:
    params = QueueParams(time_limit_s=3600)  # a 60 s margin: work may run 3540 s
    waiting = [Waiting(5, 60.0), Waiting(3, 3540.0), Waiting(2, 3541.0), Waiting(7, None)]
    assert demand(waiting, params) == 8


def test_failures_back_off_doubling_up_to_the_most() -> None:
    assert backoff_s(0) == 0
    assert backoff_s(1) == BACKOFF_FIRST_S
    assert backoff_s(2) == 2 * BACKOFF_FIRST_S
    assert backoff_s(50) == BACKOFF_MAX_S
    q = failed(queue(), "sbatch: error: invalid partition specified: nope", NOW)
    assert q.failures == 1 and q.backoff_until == NOW + BACKOFF_FIRST_S and "invalid partition" in (q.last_error or "")
    q = failed(q, "again", NOW + 20)
    assert q.failures == 2 and q.backoff_until == NOW + 20 + 2 * BACKOFF_FIRST_S
    assert submissions(q, [], 10, NOW + 21) == 0
    back = succeeded(q)
    assert back.failures == 0 and back.backoff_until is None and back.last_error == "again"


@given(st.lists(st.floats(0, 10_000), min_size=1, max_size=40))
def test_a_queue_that_keeps_failing_asks_at_most_once_a_back_off(moments: list[float]) -> None:
    """Whatever the allocator's ticks, a queue whose every submission fails submits once, then
    no more until its back-off is over: never a hot loop."""
    q = queue(backlog=3, max_workers=3)
    tries: list[float] = []
    for at in sorted(moments):
        if submissions(q, [], 10, at):
            tries.append(at)
            q = failed(q, "refused", at)
    for first, second in zip(tries, tries[1:], strict=False):
        assert second - first >= BACKOFF_FIRST_S


def test_an_allocation_is_given_back_once_all_its_nodes_were_idle_long_enough() -> None:
    watch = IdleWatch()
    running = [alloc("7", AllocationState.RUNNING, workers=2), alloc("8", AllocationState.RUNNING)]
    nodes = {"7": ["slurm-7-0", "slurm-7-1"], "8": ["slurm-8-0"]}
    watch.update({"slurm-7-0": False, "slurm-7-1": True, "slurm-8-0": False}, NOW)
    assert idle_allocations(running, nodes, watch, 60, NOW + 59) == []
    assert idle_allocations(running, nodes, watch, 60, NOW + 60) == ["8"]
    # Node 7-1 ends its work at NOW+30: its idle time starts then.
    watch.update({"slurm-7-0": False, "slurm-7-1": False, "slurm-8-0": True}, NOW + 30)
    assert idle_allocations(running, nodes, watch, 60, NOW + 60) == []
    assert idle_allocations(running, nodes, watch, 60, NOW + 90) == ["7"]
    # A queued allocation, or one with no node yet, is not idle.
    assert idle_allocations([alloc("9", AllocationState.QUEUED)], {"9": []}, watch, 0, NOW) == []
    assert idle_allocations([alloc("9", AllocationState.RUNNING)], {"9": []}, watch, 0, NOW) == []


def test_queue_parameters_are_checked() -> None:
    assert QueueParams().problems() == []
    assert "unknown outer scheduler" in QueueParams(manager="cron").problems()[0]
    assert QueueParams(max_workers=1, workers_per_alloc=2).problems()
    assert QueueParams(time_limit_s=10).problems()
    assert QueueParams(partition="a b").problems()
    assert QueueParams(extra_args=("--x\ny",)).problems()


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("90s", 90), ("5m", 300), ("1h30m", 5400), ("2d", 172800)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5x", "m", "1h 2m", "-5m"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)
