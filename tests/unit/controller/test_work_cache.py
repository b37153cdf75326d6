"""The planner's input kept between passes is what a pass from scratch would build: after every
step of random sequences of submissions (with dependencies, singletons, holds), starts, exits,
cancels, alters and queue changes; and the quick pass on a long queue stops at the first job
that must wait, leaving the rest for the full pass."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from tests.helpers.controller_world import OK, WITHOUT_PROMISES, World

from drover.controller.effects import Outcome
from drover.controller.handlers import queues
from drover.controller.handlers.dispatch import (
    OrderOptions,
    _BusyNames,
    _pending_work,
    _refresh,
    schedule,
)
from drover.controller.handlers.waiting import ProgressLookup
from drover.protocol.api import DependencyOn
from drover.protocol.node_channel import StartAttempt


def fresh_work(world: World) -> dict[int, object]:
    """Every job's pending work built from scratch, as a pass that keeps nothing would."""
    outcome = Outcome()
    lookup, busy = ProgressLookup(world.state, world.store), _BusyNames(world.state)
    built = {}
    for job in world.state.jobs.values():
        item = _pending_work(world.state, outcome, job, lookup, busy, world.now, OrderOptions(1.0))
        if item is not None:
            built[job.id] = item
    assert not outcome.changes, "building from scratch changed something the kept work had not"
    return built


@pytest.mark.parametrize("seed", range(25))
def test_the_kept_work_is_what_a_pass_from_scratch_builds(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    world = World(tmp_path / "drover.db")
    world.connect(cpus=3)
    running: list[str] = []
    for _ in range(40):
        jobs = sorted(world.state.jobs)
        step = rng.choice(["submit", "submit", "depend", "singleton", "exit", "cancel", "hold", "release",
                           "alter", "stop", "start"])
        if step == "submit":
            world.submit(priority=rng.randint(-3, 0), hold=rng.random() < 0.2, name=rng.choice("ab"))
        elif step == "depend" and jobs:
            kind = rng.choice(["afterok", "afterany", "afternotok", "after"])
            world.submit(dependencies=[DependencyOn(kind=kind, job=rng.choice(jobs))],
                         kill_on_invalid_dep=rng.random() < 0.5)
        elif step == "singleton":
            world.submit(name=rng.choice("ab"), dependencies=[DependencyOn(kind="singleton")])
        elif step == "exit" and running:
            attempt = running.pop(rng.randrange(len(running)))
            world.started(attempt)
            world.exited(attempt, dict(OK, exit_code=rng.choice([0, 0, 1])))
        elif step in ("cancel", "hold", "release") and jobs:
            world.act(step, str(rng.choice(jobs)))
        elif step == "alter" and jobs:
            world.run(_alter(world, rng.choice(jobs), rng.randint(-5, 0)))
        elif step in ("stop", "start"):
            world.run(queues.switch(world.state, {}, "default", step, "", "root", True, world.now))
        before = len(world.sent)
        world.run(schedule(world.state, world.now, world.store, OrderOptions(1.0)))
        running += [s.message.attempt for s in world.sent[before:] if isinstance(s.message, StartAttempt)]
        refreshed = Outcome()
        _refresh(world.state, refreshed, world.store, world.now, OrderOptions(1.0))  # what the next pass builds
        assert not refreshed.changes and world.state.work.items == fresh_work(world), f"step {step}"
        world.state.work.check()


def _alter(world: World, job: int, priority: int) -> Outcome:
    from drover.controller.handlers.actions import act

    outcome, _ = act(world.state, "alter", [str(job)], lambda *_: None, world.now, world.store, priority=priority)
    return outcome


def test_a_quick_pass_stops_at_the_first_job_that_must_wait(tmp_path: Path) -> None:
    world = World(tmp_path / "drover.db")
    world.connect(cpus=2)
    orders = WITHOUT_PROMISES  # counts the jobs left waiting: none promised behind the one that starts
    for _ in range(1200):  # over QUICK_ABOVE: a long queue
        world.submit(cpus=2)
    world.run(schedule(world.state, world.now, world.store, orders))  # the first pass is full
    reasons = world.state.pending_reasons
    assert len(reasons) == 1199 and world.state.work.last_full == world.now - 1
    late = world.submit(cpus=1)[0]  # behind 1,199 others
    world.run(schedule(world.state, world.now, world.store, orders))  # quick: stops at the first waiting job
    assert late not in world.state.pending_reasons and len(world.state.pending_reasons) == 1199
    assert world.state.wake_at == world.state.work.last_full + orders.scheduler.full_pass_s  # the full pass's time
    world.now = world.state.wake_at
    world.run(schedule(world.state, world.now, world.store, orders))
    assert world.state.pending_reasons[late].value == "priority"
