"""A planner pass reads an array's running count and requeued tasks from the job's tally, kept as
its tasks change (core/job.py TaskTally), not by walking every task record: an array that frees
one slot at a time would otherwise cost each pass its size. The tally says what a walk says,
through starts, exits, requeues, holds and cancels, and after the working set is loaded again."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.controller_world import WITHOUT_PROMISES, World

from drover.controller.effects import Outcome
from drover.controller.handlers.dispatch import OrderOptions, _BusyNames, _pending_work
from drover.controller.handlers.waiting import ProgressLookup
from drover.core.job import Job, Task
from drover.core.job_state import JobState


class CountedTasks(dict[int, Task]):
    """A job's task records that count how often they are walked."""

    walks = 0

    def values(self) -> Any:
        CountedTasks.walks += 1
        return super().values()

    def items(self) -> Any:
        CountedTasks.walks += 1
        return super().items()

    def __iter__(self) -> Any:
        CountedTasks.walks += 1
        return super().__iter__()


def walked(job: Job) -> tuple[int, tuple[int, ...]]:
    """The running count and requeued indices, found by walking every task record."""
    return (sum(1 for task in dict.values(job.tasks) if task.state.is_active),
            tuple(sorted(index for index, task in dict.items(job.tasks) if task.state is JobState.PENDING)))


def pending_work(world: World, job: Job) -> tuple[int, tuple[int, ...]] | None:
    lookup, busy = ProgressLookup(world.state, world.store), _BusyNames(world.state)
    item = _pending_work(world.state, Outcome(), job, lookup, busy, world.now, OrderOptions(1.0))
    return None if item is None else (item.running_count, item.pending.requeued)


def test_a_pass_over_a_big_array_walks_its_task_records_once_not_each_time(tmp_path: Path) -> None:
    world = World(tmp_path / "drover.db")
    world.options = WITHOUT_PROMISES  # a start a pass for each end, each task's order after its pass
    world.connect(cpus=2)
    (job_id,) = world.submit(array="1-200")
    job = world.state.jobs[job_id]
    job.tasks = CountedTasks(job.tasks)
    CountedTasks.walks = 0
    reads = 0
    for _ in range(60):  # one slot frees at a time, as on B1: a pass after each end
        for order in world.schedule():
            world.started(order.attempt)
            world.exited(order.attempt)
        before = CountedTasks.walks
        work = pending_work(world, job)
        reads += CountedTasks.walks - before
        assert work is not None and work == walked(job)
    assert len(job.tasks) > 100
    assert reads <= 1, f"{reads} walks of the task records in 60 builds of the array's pending work"


@pytest.mark.parametrize("seed", range(10))
def test_the_tally_says_what_a_walk_of_the_task_records_says(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    world = World(tmp_path / "drover.db")
    world.connect(cpus=3)
    (job_id,) = world.submit(array="1-40", rerunnable=True)
    running: list[str] = []
    for step in range(80):
        job = world.state.jobs.get(job_id)
        if job is None:
            break
        action = rng.choice(["schedule", "schedule", "exit", "exit", "requeue", "hold", "release", "cancel",
                             "reload"])
        if action == "schedule":
            for order in world.schedule():
                world.started(order.attempt)
                running.append(order.attempt)
        elif action == "exit" and running:
            world.exited(running.pop(rng.randrange(len(running))))
        elif action == "reload" and step % 10 == 0:
            world.reload()
            world.connect(cpus=3, known=[])
            running.clear()  # the node that said hello knows none of them: they are lost or requeued
        elif action in ("requeue", "hold", "release", "cancel"):
            indices = sorted(job.tasks) or [1]
            world.act(action, f"{job_id}.{rng.choice(indices)}")
        job = world.state.jobs.get(job_id)
        if job is None:
            break
        work = pending_work(world, job)
        if work is not None:
            assert work == walked(job), f"step {step} ({action})"
        assert job.tally().active == walked(job)[0]
