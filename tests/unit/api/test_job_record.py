"""The job's spec as the shepherd reads it (records.JobRecord, JOB_DEFAULTS) is what
scripts/job_record.py writes from core/job_spec.py's JobSpec: a new job option reaches the
shepherd's typed record by running the script, never by editing records.py."""

from __future__ import annotations

import pathlib
import typing

import msgspec
from tests.helpers.scripts import assert_current, script_module

from drover.core.job_spec import JobSpec
from drover.records import JOB_DEFAULTS, JobRecord

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_records_py_holds_what_the_script_writes_from_job_spec() -> None:
    generator = script_module("job_record")
    assert generator.generated() in (ROOT / "src" / "drover" / "records.py").read_text(), (
        "src/drover/records.py's JobRecord is out of date: run .venv/bin/python scripts/job_record.py")
    assert_current("job_record")


def test_every_field_of_the_spec_is_a_required_key_with_its_default() -> None:
    fields = [field.name for field in msgspec.structs.fields(JobSpec)]
    assert list(typing.get_type_hints(JobRecord)) == fields and JobRecord.__required_keys__ == set(fields)
    assert msgspec.to_builtins(JobSpec()) == JOB_DEFAULTS
    msgspec.convert(msgspec.to_builtins(JobSpec(workdir="/w", prolog="true")), JobRecord)  # the encoding is the type


def test_a_field_added_to_the_spec_is_written_with_its_type_and_comment(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    generator = script_module("job_record")

    class Wider(JobSpec, frozen=True, kw_only=True):
        comment: str | None = None  # a note of the owner's, shown with the job

    monkeypatch.setattr(generator, "JobSpec", Wider)
    written = generator.generated()
    assert "    comment: str | None  # a note of the owner's, shown with the job\n" in written
    assert '    "comment": None,\n' in written
