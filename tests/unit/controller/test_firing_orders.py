"""What the controller puts in an attempt's order for the firing of its job: the queue's
starter method (Grid Engine's queue_conf starter_method) and the named environments the job asked
for, with their scripts as drover.toml has them (Altair Accelerator's steps 3 and 18-19)."""

from __future__ import annotations

from pathlib import Path

from tests.unit.controller.test_handlers import World

from drover.config_schema import EnvironmentSection, QueueSection
from drover.controller.handlers.dispatch import OrderOptions, start_order


def test_gridengine_starter_method_and_accelerator_environments_travel_in_the_order(tmp_path: Path) -> None:
    world = World(tmp_path / "drover.db")
    world.connect()
    (job_id,) = world.submit()
    (order,) = world.schedule()
    job = world.state.jobs[job_id]
    attempt = world.state.attempt_by_name(order.attempt)
    assert attempt is not None
    assert "queue_starter_method" not in order.config and "environments" not in order.config
    job.spec["environments"] = ["gcc13", "gone"]  # "gone": removed from drover.toml since the submission
    options = OrderOptions(1.0, queues={"default": QueueSection(starter_method="/opt/site/starter")},
                           environments={"gcc13": EnvironmentSection(setup="/opt/env/gcc13.sh", post="/opt/env/p.sh")})
    config = start_order(job, world.store.job_payloads([job_id])[job_id], attempt, options).config
    assert config.get("queue_starter_method") == "/opt/site/starter"
    assert config.get("environments") == [
        {"name": "gcc13", "setup": "/opt/env/gcc13.sh", "post": "/opt/env/p.sh"},
        {"name": "gone", "setup": None, "post": None, "unknown": True},
    ]
