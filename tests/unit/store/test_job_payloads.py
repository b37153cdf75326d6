"""A job's payload (its script, environment and staged-in files) lives in the store alone, on both
backends: the working set never holds it, an attempt's order reads it (one read for every job a
pass starts), a job stored by an older Drover with its payload in its spec still runs, and one
user's unfinished jobs are bounded in bytes, not only in number."""

from __future__ import annotations

import base64
import json

import msgspec
import pytest
from tests.helpers.controller_world import World, world  # noqa: F401  (a fixture)

from drover.controller.handlers.dispatch import OrderOptions, schedule
from drover.controller.handlers.submit import submit
from drover.controller.state import ControllerState
from drover.core.errors import BadRequest
from drover.core.job import JobPayload
from drover.core.limits import Limits
from drover.protocol.api import JobSubmission, StagedFile
from drover.protocol.node_channel import StartAttempt

SCRIPT = "#!/bin/sh\necho payload\n"
ENVIRONMENT = {"SECRET": "x" * 1000, "HOME": "/home/alice"}


def _submit(world: World, **fields: object) -> int:  # noqa: F811
    (job_id,) = world.submit(script=SCRIPT, environment=ENVIRONMENT, **fields)
    return job_id


def test_the_working_set_holds_no_payload_and_the_order_carries_it_whole(world: World) -> None:  # noqa: F811
    world.connect()
    job_id = _submit(world, stage_in=[StagedFile(name="in.txt", data=b"\x00data", mode=0o600)])
    assert not {"script", "environment", "stage_in"} & set(_stored_spec(world, job_id))
    for job in (world.state.jobs[job_id], world.store.load_working_set().jobs[job_id]):
        assert job.payload_bytes == len(SCRIPT) + sum(len(k) + len(v) + 2 for k, v in ENVIRONMENT.items()) + \
            len("in.txt") + len(base64.b64encode(b"\x00data"))
    stored = world.store.job_payloads([job_id])[job_id]
    assert stored["script"] == SCRIPT and stored["environment"] == ENVIRONMENT
    (order,) = world.schedule()
    assert order.script == SCRIPT and order.config["environment"] == ENVIRONMENT
    assert [(f.name, f.data, f.mode) for f in order.stage_in] == [("in.txt", b"\x00data", 0o600)]
    world.reload()  # a restarted controller's working set holds none either
    assert world.state.jobs[job_id].payload_bytes == world.store.load_working_set().jobs[job_id].payload_bytes


def test_a_pass_reads_each_starting_jobs_payload_once_in_one_read(world: World) -> None:  # noqa: F811
    world.connect(cpus=64)
    array = _submit(world, array="1-40")
    singles = [_submit(world) for _ in range(3)]
    reads: list[list[int]] = []
    real = world.store.job_payloads

    def counted(job_ids: list[int]) -> dict[int, JobPayload]:
        reads.append(list(job_ids))
        return real(job_ids)

    world.store.job_payloads = counted  # type: ignore[method-assign]
    orders = world.schedule()
    assert len(orders) == 43 and all(order.script == SCRIPT for order in orders)
    assert reads == [sorted([array, *singles])]
    array_orders = [order for order in orders if order.config["job_id"] == array]
    assert len({id(order.script) for order in array_orders}) == 1  # its tasks share one copy


def test_a_pass_starts_no_more_payload_bytes_than_its_bound_and_the_next_pass_the_rest(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from drover.controller.handlers import dispatch

    world.connect(cpus=8)
    jobs = [_submit(world) for _ in range(5)]
    weight = world.state.jobs[jobs[0]].payload_bytes
    monkeypatch.setattr(dispatch, "PASS_PAYLOAD_BYTES", 2 * weight)
    outcome = world.run(schedule(world.state, world.now, world.store, OrderOptions(1.0)))
    started = [s.message.config["job_id"] for s in world.sent if isinstance(s.message, StartAttempt)]
    assert started == jobs[:2] and outcome.reschedule  # the others wait for the pass that follows at once
    assert len(world.schedule()) == 2 and len(world.schedule()) == 1


def test_the_per_user_byte_limit_refuses_with_the_key_and_stores_nothing(world: World) -> None:  # noqa: F811
    limits = Limits(max_job_bytes_per_user=3000)
    first = JobSubmission(script="x" * 1000 + "\n", workdir="/tmp", hold=True)
    outcome, _ = submit(world.state, [first, first], "alice", world.now, world.store, limits=limits)
    world.run(outcome)
    with pytest.raises(BadRequest) as refused:
        submit(world.state, [JobSubmission(script="y" * 1000 + "\n", workdir="/tmp")], "alice", world.now,
               world.store, limits=limits)
    message = str(refused.value)
    assert ("the total of the scripts, environments and staged-in files of alice's unfinished jobs "
            "(3003 bytes with this request; 2002 bytes before it) is over this cluster's limit of 3000 bytes") in message
    assert "max_job_bytes_per_user in [controller] of drover.toml" in message
    assert len(world.store.load_working_set().jobs) == 2 and len(world.state.jobs) == 2  # nothing stored
    # Another user has room of their own; and once alice's jobs end, so does she.
    outcome, _ = submit(world.state, [first], "bob", world.now, world.store, limits=limits)
    world.run(outcome)
    world.act("cancel", *(str(job_id) for job_id, job in world.state.jobs.items() if job.owner == "alice"))
    outcome, _ = submit(world.state, [first, first], "alice", world.now, world.store, limits=limits)
    world.run(outcome)
    assert world.state.owner_load["alice"][2] == 2 * 1001


def test_a_job_stored_by_an_older_drover_with_its_payload_in_its_spec_still_runs(world: World) -> None:  # noqa: F811
    """Rows written before the payload had a table of its own: the spec holds it, and the job's
    weight is not stored. Loaded, it is weighed and left out of the working set; its order reads
    it from the spec; a change of its spec (a move to another queue) keeps it."""
    world.connect()
    job_id = _submit(world, hold=True)
    spec = {**msgspec.structs.asdict(world.state.jobs[job_id].spec), "script": SCRIPT, "environment": ENVIRONMENT,
            "stage_in": [{"name": "f", "data": base64.b64encode(b"old").decode(), "mode": 0o644}]}
    with world.store.transaction() as db:  # type: ignore[attr-defined]
        db.execute("DELETE FROM job_payloads WHERE job_id=?", (job_id,))
        db.execute("UPDATE jobs SET spec=?, payload_bytes=NULL WHERE id=?", (json.dumps(spec), job_id))
    world.reload()
    job = world.state.jobs[job_id]
    assert job.spec.workdir == "/tmp" and job.payload_bytes > len(SCRIPT)
    assert world.store.job_payloads([job_id])[job_id]["script"] == SCRIPT
    world.run(_moved(world, job_id))  # its spec written again, from the working set
    world.reload()
    assert "script" not in _stored_spec(world, job_id) and world.state.jobs[job_id].spec.time_limit_s == 60
    assert world.store.job_payloads([job_id])[job_id]["environment"] == ENVIRONMENT
    world.act("release", str(job_id))
    (order,) = world.schedule()
    assert order.script == SCRIPT and [f.data for f in order.stage_in] == [b"old"]


def _stored_spec(world: World, job_id: int) -> dict[str, object]:  # noqa: F811
    """The job's spec as its row holds it."""
    with world.store.transaction() as db:  # type: ignore[attr-defined]
        (text,) = db.execute("SELECT spec FROM jobs WHERE id=?", (job_id,)).fetchone()
    return json.loads(text)  # type: ignore[no-any-return]


def _moved(world: World, job_id: int) -> object:  # noqa: F811
    """The job's spec changed and written again, as `drover alter --queue` does."""
    from drover.controller.effects import Outcome

    outcome = Outcome()
    job = world.state.jobs[job_id]
    job.spec = msgspec.structs.replace(job.spec, time_limit_s=60)
    outcome.changes.job(job, spec=True)
    return outcome


def test_purging_an_ended_job_forgets_its_payload(world: World) -> None:  # noqa: F811
    job_id = _submit(world, hold=True)
    world.act("cancel", str(job_id))
    assert world.store.job_payloads([job_id])
    assert world.store.purge_ended(world.now + 10, 100) == [job_id]
    assert world.store.job_payloads([job_id]) == {}


def test_the_working_sets_byte_count_survives_a_reload(world: World) -> None:  # noqa: F811
    _submit(world, hold=True)
    _submit(world, hold=True)
    before = world.state.owner_load["alice"]
    assert ControllerState.from_working_set(world.store.load_working_set()).owner_load["alice"] == before
