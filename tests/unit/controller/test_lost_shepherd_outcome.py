"""A lost shepherd is the system's failure: the controller requeues the job as a new attempt
while it may run again, at most until attempt 3, and fails it with the reason otherwise; the
node's cleanup (its mail and final record) reads the same meaning from the same table."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.attempt_config import attempt_config
from tests.helpers.controller_world import World, world  # noqa: F401  (a fixture)

from drover.core.exit_status import MAX_SYSTEM_FAILURE_ATTEMPT
from drover.execd import attempt_records, cleanup
from drover.spool import layout

LOST = {"exit_code": None, "signal": None, "failure": "the shepherd died (signal 9) before recording how the job ended",
        "timed_out": False, "terminated": False, "out_of_memory": False, "shepherd_lost": True}


def _events(of: World, job: int) -> list[tuple[str, dict[str, object]]]:
    return [(e.kind, e.detail) for _, e in of.store.events_of(job, 0, 1000)]


def test_a_lost_shepherd_requeues_the_job_until_attempt_3_then_fails_it(world: World) -> None:  # noqa: F811
    world.connect()
    (job,) = world.submit()
    for number in range(1, MAX_SYSTEM_FAILURE_ATTEMPT + 1):
        (order,) = world.schedule()
        assert order.attempt == f"{job}.0.{number}"
        assert order.config["job"]["rerunnable"] is True
        world.exited(order.attempt, LOST)
        assert world.state.jobs[job].tasks[0].state.value == "pending"
    (order,) = world.schedule()
    world.exited(order.attempt, LOST)
    assert job in world.ended
    assert world.store.load_job(job).state.value == "failed"  # type: ignore[union-attr]
    reasons = [detail.get("reason") for kind, detail in _events(world, job) if kind in ("requeued", "failed")]
    assert reasons == [LOST["failure"] + "; requeued as a new attempt"] * 3 + [
        LOST["failure"] + "; not requeued again after 4 attempts"]


def test_a_job_that_may_not_run_again_fails_at_once_with_the_reason(world: World) -> None:  # noqa: F811
    world.connect()
    (job,) = world.submit(rerunnable=False)
    (order,) = world.schedule()
    assert order.config["job"]["rerunnable"] is False
    world.exited(order.attempt, LOST)
    assert world.store.load_job(job).state.value == "failed"  # type: ignore[union-attr]
    (attempt,) = world.store.attempts_of(job)
    assert attempt.exit is not None and attempt.exit["failure"] == LOST["failure"]
    assert ("failed", {"trigger": "fail", "before": "completing", "after": "failed",
                       "reason": LOST["failure"] + "; the job is not rerunnable"}) in _events(world, job)


def test_the_nodes_final_record_agrees(tmp_path: Path) -> None:
    def outcome(attempt_number: int, rerunnable: bool) -> str:
        spool = layout.SpoolDir(str(tmp_path), f"1.0.{attempt_number}")
        Path(spool.path).mkdir(exist_ok=True)
        Path(spool.record(layout.EXIT_STATUS)).write_text(json.dumps(LOST))
        config = attempt_config(str(tmp_path), spool.name, rerunnable=rerunnable)
        Path(spool.record(layout.CONFIG)).write_text(json.dumps(config))
        return str(cleanup._final_record(attempt_records.Ended(spool, None))["outcome"])

    assert [outcome(n, True) for n in (1, 2, 3, 4)] == ["REQUEUE", "REQUEUE", "REQUEUE", "FAIL"]
    assert outcome(1, False) == "FAIL"
