"""Checkpointing jobs in the controller's handlers (Grid Engine's checkpoint(5), qsub -ckpt, -c):
what a submission keeps, what each start order carries, and how checkpoint, migrate and a
suspend with 'x' act, on a real (temporary) store, without sockets or processes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.helpers.controller_world import OK, World

from drover.controller.handlers.dispatch import OrderOptions, schedule
from drover.controller.handlers.submit import submit
from drover.core.checkpoints import parse_environment
from drover.core.errors import BadRequest
from drover.execd.site_methods import SiteMethods
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import SignalAttempt, StartAttempt

ENVIRONMENTS = {
    "blcr": parse_environment("blcr", "application-level", {"ckpt_command": "/opt/ckpt $job_pid $ckpt_dir",
                                                             "migr_command": "/opt/migr $job_name"},
                              "/ckpt/$job_owner/$job_id.$task_id", "none", "sx", 60),
    "mine": parse_environment("mine", "userdefined", {}, None, "USR2", "mr", 30),
}


class CheckpointWorld(World):
    def submit(self, **fields: object) -> list[int]:
        spec = JobSubmission(**{"script": "true\n", "workdir": "/tmp", **fields})  # type: ignore[arg-type]
        outcome, ids = submit(self.state, [spec], "alice", self.now, self.store, checkpoints=ENVIRONMENTS)
        self.run(outcome)
        return ids

    def schedule(self) -> list[StartAttempt]:
        before = len(self.sent)
        self.run(schedule(self.state, self.now, self.store, OrderOptions(1.0, checkpoints=ENVIRONMENTS)))
        return [s.message for s in self.sent[before:] if isinstance(s.message, StartAttempt)]

    def running_with(self, **fields: object) -> tuple[int, StartAttempt]:
        if not self.state.nodes:  # connecting again would lose what runs there
            self.connect()
        (job,) = self.submit(**fields)
        (order,) = self.schedule()
        self.started(order.attempt)
        return job, order


@pytest.fixture
def world(store_url: str) -> Iterator[CheckpointWorld]:
    made = CheckpointWorld(store_url)
    yield made
    made.store.close()


def test_qsub_ckpt_a_name_not_configured_is_refused_at_submission(world: CheckpointWorld) -> None:
    with pytest.raises(BadRequest, match="no checkpoint environment 'nope'; known: blcr, mine"):
        world.submit(checkpoint="nope")
    with pytest.raises(BadRequest, match="--checkpoint-interval .* needs a checkpoint environment"):
        world.submit(checkpoint_occasion="m")
    with pytest.raises(BadRequest, match="give one of them"):
        world.submit(checkpoint="mine", checkpoint_signal="USR1")
    with pytest.raises(BadRequest, match="-c 'q'"):
        world.submit(checkpoint="mine", checkpoint_occasion="q")


def test_gridengine_start_order_names_the_environment_and_the_node_expands_its_own_but_job_pid(
        world: CheckpointWorld) -> None:
    job, order = world.running_with(checkpoint="blcr", name="sim")
    sent = order.config["checkpoint"]
    assert sent["name"] == "blcr" and (sent["ckpt_command"], sent["migr_command"], sent["clean_command"]) == (None,) * 3
    site = SiteMethods("drover.toml", checkpoints=ENVIRONMENTS)  # the node's own drover.toml
    assert site.refusal(order.config) is None
    record = site.filled(order.config)["checkpoint"]
    assert record["ckpt_command"] == ["/opt/ckpt", "$job_pid", f"/ckpt/alice/{job}.0"]
    assert record["migr_command"] == ["/opt/migr", "sim"]
    assert record["ckpt_dir"] == f"/ckpt/alice/{job}.0" and record["when"] == "sx" and record["interval_s"] is None
    assert record["restarted"] is False


def test_qsub_c_interval_is_at_least_min_cpu_interval_and_r_makes_the_job_rerunnable(world: CheckpointWorld) -> None:
    job, order = world.running_with(checkpoint="mine", checkpoint_occasion="00:00:10", rerunnable=False)
    assert order.config["checkpoint"]["when"] == "mr" and order.config["checkpoint"]["interval_s"] == 30
    assert order.config["job"]["rerunnable"] is True  # checkpoint(5) 'r'


def test_gridengine_migrate_checkpoints_stops_and_requeues_and_the_next_attempt_restarts(world: CheckpointWorld) -> None:
    job, order = world.running_with(checkpoint="blcr")
    (result,) = world.act("migrate", str(job))
    assert result.ok and result.message == "1 migrating"  # type: ignore[attr-defined]
    assert SignalAttempt(order.attempt, "migrate", "requeue") in [s.message for s in world.sent]
    assert "migrate_requested" in world.event_kinds(job)
    world.exited(order.attempt, dict(OK, exit_code=None, signal=15, terminated=True))
    (second,) = world.schedule()
    assert second.attempt == f"{job}.0.2" and second.config["checkpoint"]["restarted"] is True


def test_gridengine_checkpoint_of_a_job_in_an_environment_goes_to_its_shepherd(world: CheckpointWorld) -> None:
    job, order = world.running_with(checkpoint="mine")
    (result,) = world.act("checkpoint", str(job))
    assert result.ok  # type: ignore[attr-defined]
    assert SignalAttempt(order.attempt, "checkpoint") in [s.message for s in world.sent]


def test_gridengine_checkpoint5_x_a_suspend_migrates_and_without_x_it_suspends(world: CheckpointWorld) -> None:
    job, order = world.running_with(checkpoint="blcr")  # sx
    world.act("suspend", str(job))
    assert SignalAttempt(order.attempt, "migrate", "requeue") in [s.message for s in world.sent]
    other, other_order = world.running_with(checkpoint="mine")  # mr
    world.act("suspend", str(other))
    assert SignalAttempt(other_order.attempt, "suspend") in [s.message for s in world.sent]


def test_migrate_of_a_job_without_an_environment_is_refused(world: CheckpointWorld) -> None:
    job, _ = world.running_with()
    (result,) = world.act("migrate", str(job))
    assert not result.ok and "has no checkpoint environment" in result.message  # type: ignore[attr-defined]
