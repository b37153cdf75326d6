"""What the controller puts in an attempt's order for the firing of its job: the queue's
starter method (Grid Engine's queue_conf starter_method) and the named environments the job asked
for (Altair Accelerator's steps 3 and 18-19), by name: the node runs its own drover.toml's."""

from __future__ import annotations

from pathlib import Path
from typing import get_type_hints

import msgspec
from tests.helpers.controller_world import World

from drover.cluster.named_methods import digest
from drover.config_schema import EnvironmentSection, QueueSection
from drover.controller.handlers.dispatch import OrderOptions, start_order
from drover.records import AttemptIdentity, Placement, SiteSettings
from drover.store.rows import spec_text


def test_gridengine_starter_method_and_accelerator_environments_are_named_in_the_order_never_sent(tmp_path: Path) -> None:
    """The order names the job's environments and lists the queue's starter by its digest; the
    commands themselves are the node's own drover.toml's (execd/site_methods.py)."""
    world = World(tmp_path / "drover.db")
    world.connect()
    (job_id,) = world.submit()
    (order,) = world.schedule()
    job = world.state.jobs[job_id]
    attempt = world.state.attempt_by_name(order.attempt)
    assert attempt is not None
    assert "queue_starter_method" not in order.config and order.config["job"]["environments"] == []
    assert "site_methods" not in order.config
    job.spec = msgspec.structs.replace(job.spec, environments=["gcc13", "gone"])  # "gone": no longer in drover.toml
    options = OrderOptions(1.0, queues={"default": QueueSection(starter_method="/opt/site/starter")},
                           environments={"gcc13": EnvironmentSection(setup="/opt/env/gcc13.sh", post="/opt/env/p.sh")})
    config = start_order(job, world.store.job_payloads([job_id])[job_id], attempt, options).config
    assert "queue_starter_method" not in config and "environments" not in config
    assert config["job"]["environments"] == ["gcc13", "gone"]
    assert config.get("site_methods") == {"queue_starter_method": digest("/opt/site/starter")}


def test_the_order_is_its_parts_and_the_spec_whole_as_the_store_holds_it(tmp_path: Path) -> None:
    """The job's spec goes whole (every field, its canonical encoding's values): an option added
    to core/job_spec.py reaches the node with no line in start_order. The other keys are the
    attempt's identity, placement and the site's settings, each typed in records.py."""
    world = World(tmp_path / "drover.db")
    world.connect()
    (job_id,) = world.submit(prolog="echo before", time_limit_s=60, stage_out=["*.dat"])
    (order,) = world.schedule()
    spec = world.state.jobs[job_id].spec
    assert order.config["job"] == msgspec.to_builtins(spec)
    assert msgspec.json.decode(msgspec.json.encode(order.config["job"])) == msgspec.json.decode(spec_text(spec))
    parts = {*get_type_hints(AttemptIdentity), *get_type_hints(Placement), *get_type_hints(SiteSettings)}
    assert set(order.config) - parts == {"job"}
