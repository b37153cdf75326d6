"""A job's spec as the store keeps it: its canonical encoding with every field, read back in one
place (store/rows.py), where a row written by an older Drover gets each key it lacks from the
defaults of core/job_spec.py and a newer Drover's keys are ignored."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from tests.unit.controller.test_handlers import World

from drover.core.arrays import TaskIndices
from drover.core.dependencies import Dependencies
from drover.core.job import Job
from drover.core.job_spec import JobSpec
from drover.core.resources import Resources
from drover.protocol.canonical import canonical
from drover.store.rows import job_from_row, job_row, spec_from_text, spec_text

# The spec as the first Drover stored it (controller/handlers/submit.py of its first commit):
# the payload (script, environment) still in it, and none of the options added since.
FIRST_DROVER = ('{"script":"#!/bin/sh\\necho old\\n","workdir":"/home/alice","submit_dir":"/home/alice",'
                '"output":"drover-%j.out","error":null,"open_mode":"append","environment":{"A":"1"},'
                '"time_limit_s":600}')


def test_a_spec_stored_by_the_first_drover_reads_with_the_defaults() -> None:
    spec = spec_from_text(FIRST_DROVER)
    assert spec == JobSpec(workdir="/home/alice", submit_dir="/home/alice", output="drover-%j.out", error=None,
                           open_mode="append", time_limit_s=600)
    # Each key added since has its one default, the same a submission that leaves it out gets.
    assert (spec.queue, spec.warn_before_s, spec.epilog_sets_exit, spec.rerunnable, spec.kill_on_invalid_dep) == (
        "default", 60, True, True, True)
    assert (spec.mail_type, spec.stage_out, spec.gres, spec.licenses, spec.environments) == ([], [], [], {}, [])
    assert spec.pe is None and spec.pe_slots is None and spec.checkpoint is None and spec.pids_max is None


def test_a_key_this_drover_does_not_know_is_ignored() -> None:
    """A row a newer Drover wrote, read by this one after a downgrade."""
    newer = json.loads(spec_text(JobSpec(workdir="/w", queue="long")))
    newer["an_option_of_a_later_drover"] = {"any": ["shape"]}
    assert spec_from_text(json.dumps(newer)) == JobSpec(workdir="/w", queue="long")


def test_the_stored_spec_is_canonical_holds_every_field_and_reads_back_equal() -> None:
    spec = JobSpec(workdir="/w", output="out-%j", gres=["gpu:1"], licenses={"matlab": 2}, pe="mpi", pe_slots=4,
                   checkpoint="blcr", checkpoint_when="sx", warn_signal="SIGUSR1", time_limit_s=90)
    text = spec_text(spec)
    # Every field is written, defaults too: an older Drover reads some keys without a default.
    assert set(json.loads(text)) == set(JobSpec.__struct_fields__)
    assert text.encode() == canonical(json.loads(text))  # keys sorted, no whitespace
    assert spec_from_text(text) == spec


def test_a_job_row_of_an_older_drover_is_weighed_from_the_payload_its_spec_holds() -> None:
    job = Job(7, "alice", "old", 1.0, 0, Resources(1, 100), TaskIndices(), False, None, Dependencies(),
              JobSpec(workdir="/home/alice"))
    row = list(job_row(job))
    row[11], row[21] = FIRST_DROVER, None  # its spec as first stored, its weight never written
    loaded = job_from_row(row)
    assert loaded.spec == spec_from_text(FIRST_DROVER)
    assert loaded.payload_bytes == len("#!/bin/sh\necho old\n") + len("A") + len("1") + 2


def test_a_stored_spec_of_another_shape_is_refused_naming_its_job() -> None:
    job = Job(7, "alice", "j", 1.0, 0, Resources(1, 100), TaskIndices(), False, None, Dependencies(), JobSpec())
    row = list(job_row(job))
    row[11] = '{"workdir":"/w","warn_before_s":"soon"}'
    with pytest.raises(ValueError, match=r"job 7: its stored spec does not read as a job spec: .*warn_before_s"):
        job_from_row(row)


def test_a_changed_spec_is_a_new_value() -> None:
    """The spec is frozen: a change (drover alter --queue) replaces it, and the store is told."""
    spec = JobSpec(workdir="/w")
    moved = msgspec.structs.replace(spec, queue="long")
    assert spec.queue == "default" and moved.queue == "long"
    with pytest.raises(AttributeError):
        spec.queue = "long"  # type: ignore[misc]  # what the type refuses, refused when run too


def test_a_job_stored_by_the_first_drover_is_ordered_with_the_defaults(tmp_path: Path) -> None:
    """Its row as the first Drover wrote it: its attempt's order has the options added since at
    their defaults, as a submission that leaves them out would."""
    world = World(tmp_path / "drover.db")
    world.connect()
    (old,) = world.submit(hold=True)
    (new,) = world.submit(hold=True, workdir="/home/alice", open_mode="append", time_limit_s=600)
    with world.store.transaction() as db:  # type: ignore[attr-defined]
        db.execute("DELETE FROM job_payloads WHERE job_id=?", (old,))
        db.execute("UPDATE jobs SET spec=?, payload_bytes=NULL WHERE id=?", (FIRST_DROVER, old))
    world.reload()
    world.act("release", str(old), str(new))
    orders = {order.config["job_id"]: order for order in world.schedule()}
    assert orders[old].script == "#!/bin/sh\necho old\n" and orders[old].config["environment"] == {"A": "1"}
    same = {"job_id", "attempt", "name", "cpu_ids", "stdout", "environment", "priority", "node"}
    assert {key: value for key, value in orders[old].config.items() if key not in same} == {
        key: value for key, value in orders[new].config.items() if key not in same}
    world.store.close()
