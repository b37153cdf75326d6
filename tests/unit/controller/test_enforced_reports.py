"""What the controller keeps of the node's enforcement: each action is an event of the job with the
figures; and a queue's enforce_cpu/enforce_memory travel in the attempt's order."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers.controller_world import World

from drover.config_schema import QueueSection
from drover.controller.handlers.dispatch import OrderOptions, start_order
from drover.controller.handlers.node_reports import on_reports
from drover.protocol.node_channel import Enforced


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path / "drover.db")


def test_each_action_is_an_event_of_the_job_with_its_figures(world: World) -> None:
    job, name = world.running()
    reniced = Enforced(name, "reniced", {"reason": "cpu", "cpu": 2.1, "cpus": 1, "limit": 1.25, "nice_from": 0,
                                         "nice_to": 5})
    warned = Enforced(name, "memory_warning", {"reason": "memory", "memory_mib": 150.0, "requested_mib": 100})
    outcome = world.run(on_reports(world.state, "n1", [reniced, warned], world.now))
    assert not outcome.effects  # nothing to acknowledge: said once
    events = [e for _, e in world.store.events_of(job, 0, 1000) if e.kind in ("reniced", "memory_warning")]
    assert [(e.kind, e.index, e.attempt) for e in events] == [("reniced", 0, 1), ("memory_warning", 0, 1)]
    assert events[0].detail == {"node": "n1", "reason": "cpu", "cpu": 2.1, "cpus": 1, "limit": 1.25,
                                "nice_from": 0, "nice_to": 5}
    assert events[1].detail["memory_mib"] == 150.0


def test_an_unknown_action_or_attempt_changes_nothing_and_the_events_own_fields_stay_its_own(world: World) -> None:
    job, name = world.running()
    before = world.event_kinds(job)
    world.run(on_reports(world.state, "n1", [Enforced(name, "rebooted", {}), Enforced("99.0.1", "reniced", {})],
                         world.now))
    assert world.event_kinds(job) == before
    world.run(on_reports(world.state, "n1", [Enforced(name, "killed_over_memory", {"kind": "x", "job_id": 7,
                                                                                    "memory_mib": 300.0})], world.now))
    (event,) = [e for _, e in world.store.events_of(job, 0, 1000) if e.kind == "killed_over_memory"]
    assert event.job_id == job and event.detail == {"node": "n1", "memory_mib": 300.0}


def test_the_queues_enforcement_settings_travel_in_the_order(world: World) -> None:
    world.connect()
    (job_id,) = world.submit()
    (order,) = world.schedule()
    job = world.state.jobs[job_id]
    attempt = world.state.attempt_by_name(order.attempt)
    assert attempt is not None
    assert "enforce_cpu" not in order.config and "enforce_memory" not in order.config  # the node's own
    queues = {"default": QueueSection(enforce_cpu="off", enforce_memory="on")}
    config = start_order(job, world.store.job_payloads([job_id])[job_id], attempt, OrderOptions(1.0, queues=queues)).config
    assert config.get("enforce_cpu") == "off" and config.get("enforce_memory") == "on"
