"""The controller's side of priority and backfill: decayed usage, time limits and queue priority
fed to the planner, and the reservation as a job's reason."""

from __future__ import annotations

import math
from pathlib import Path

from tests.helpers.controller_world import World

from drover.config_schema import QueueSection, SchedulerSection
from drover.controller.handlers.dispatch import OrderOptions, policy_of, schedule
from drover.controller.handlers.fairshare import DecayedUsage
from drover.protocol.node_channel import StartAttempt
from drover.scheduler.reasons import PendingReason


def test_usage_halves_every_half_life_and_adds_up() -> None:
    usage = DecayedUsage(half_life_s=100)
    usage.add("alice", 400, at=0)
    usage.add("alice", 100, at=100)
    assert math.isclose(usage.at(100)["alice"], 300)
    assert math.isclose(usage.at(300)["alice"], 75)
    usage.add("alice", 100, at=0)  # reported late: decayed to the last time counted
    assert math.isclose(usage.at(100)["alice"], 350)


def test_backfill_reserves_for_the_wide_job_and_starts_a_short_one(tmp_path: Path) -> None:
    world = World(tmp_path / "drover.db")
    world.connect("n1", cpus=2)
    orders = OrderOptions(1.0, {"high": QueueSection(priority=5)}, SchedulerSection(priority_weight_queue=10))
    first = world.submit(cpus=1, time_limit_s=100)[0]
    world.run(schedule(world.state, world.now, world.store, orders))
    wide = world.submit(cpus=2, time_limit_s=100)[0]
    short = world.submit(cpus=1, time_limit_s=50)[0]
    long = world.submit(cpus=1, time_limit_s=500)[0]
    before = len(world.sent)
    world.run(schedule(world.state, world.now, world.store, orders))
    started = [s.message.config["job_id"] for s in world.sent[before:] if isinstance(s.message, StartAttempt)]
    assert started == [short]
    assert world.state.tallies.backfill_starts == 1  # the metrics' count of starts ahead of a reservation
    (_, dispatched), = [(seq, e) for seq, e in world.store.events_of(short, 0, 100) if e.kind == "dispatched"]
    assert dispatched.detail.get("backfill") is True  # the dispatch event says so
    reasons = world.state.pending_reasons
    assert reasons[wide].reason is PendingReason.RESERVED and reasons[wide].detail.endswith(" on n1")
    assert reasons[long].reason is PendingReason.RESOURCES  # no room now anyway
    assert first not in reasons
    policy = policy_of(world.state, world.now, orders)
    assert policy.max_queue_priority == 5 and policy.weights.queue == 10


def test_without_config_fair_share_is_not_counted_and_order_is_strict(tmp_path: Path) -> None:
    world = World(tmp_path / "drover.db")
    world.connect("n1", cpus=2)
    world.submit(cpus=1)
    world.schedule()
    wide = world.submit(cpus=2)[0]
    narrow = world.submit(cpus=1)[0]
    assert world.schedule() == []
    assert world.state.pending_reasons[wide].reason is PendingReason.RESOURCES
    assert world.state.pending_reasons[narrow].reason is PendingReason.PRIORITY
    assert policy_of(world.state, world.now, OrderOptions(1.0)).usage == {}


def test_an_attempt_that_ends_adds_its_cpu_seconds_to_its_owners_usage(tmp_path: Path) -> None:
    world = World(tmp_path / "drover.db")
    world.connect("n1", cpus=2)
    job = world.submit(cpus=2)[0]
    world.schedule()
    attempt = next(a for a in world.state.attempts.values() if a.job_id == job)
    orders = OrderOptions(1.0, {}, SchedulerSection(priority_weight_fairshare=100))
    running = policy_of(world.state, world.now + 10, orders).usage["alice"]
    assert math.isclose(running, 2 * (world.now + 10 - attempt.dispatched_at))
    world.exited(attempt.name)
    assert world.state.usage.at(world.now)["alice"] > 0
