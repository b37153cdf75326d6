"""A submission becomes its job's stored spec in one function (handlers/submit.py, `spec_of`):
the options both share keep one default, and the user's form of the others becomes the stored
one there."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from drover.config_schema import ParallelEnvironmentSection
from drover.controller.handlers.submit import submit
from drover.controller.state import ControllerState
from drover.core.checkpoints import parse_environment
from drover.core.errors import BadRequest
from drover.core.job_spec import JobOptions, JobSpec
from drover.protocol.api import JobSubmission
from drover.store.base import open_store


def _spec(tmp_path: Path, **fields: object) -> JobSpec:
    store = open_store(f"sqlite://{tmp_path / 'drover.db'}")
    try:
        state = ControllerState.from_working_set(store.load_working_set())
        submission = msgspec.convert({"script": "true\n", "workdir": "/home/alice", **fields}, JobSubmission)
        blcr = parse_environment("blcr", "application-level", {}, None, "USR2", "x", 300)
        _, (job_id,) = submit(state, [submission], "alice", 1.0, store, checkpoints={"blcr": blcr},
                              parallel_environments={"mpi": ParallelEnvironmentSection(slots=64)})
        return state.jobs[job_id].spec
    finally:
        store.close()


def test_each_shared_option_has_one_default_in_the_submission_and_the_spec() -> None:
    submission = {f.name: f.default for f in msgspec.structs.fields(JobSubmission)}
    stored = {f.name: f.default for f in msgspec.structs.fields(JobSpec)}
    for option in msgspec.structs.fields(JobOptions):
        assert submission[option.name] == stored[option.name] == option.default, option.name


def test_a_submission_that_gives_nothing_is_stored_as_the_specs_defaults(tmp_path: Path) -> None:
    # but for what the controller fills in: the submit directory, the output pattern
    assert _spec(tmp_path) == JobSpec(workdir="/home/alice", submit_dir="/home/alice", output="drover-%j.out")


def test_the_users_form_becomes_the_stored_one(tmp_path: Path) -> None:
    spec = _spec(tmp_path, array="1-4", pe="mpi", pe_slots="2-8", warn_signal="usr1", time_limit_s=60,
                 checkpoint="blcr", checkpoint_occasion="sr", rerunnable=False)
    assert spec.output == "drover-%j_%a.out"  # an array's default pattern
    assert (spec.pe, spec.pe_slots) == ("mpi", 8)  # the most of the range the PE can ever hold
    assert spec.warn_signal == "SIGUSR1"  # the signal's canonical name
    assert (spec.checkpoint, spec.checkpoint_when, spec.checkpoint_interval_s) == ("blcr", "sr", None)
    assert spec.rerunnable  # checkpoint(5)'s 'r': requeued when its node is lost, whatever --no-requeue said


@pytest.mark.parametrize("field,value", [
    ("name", "job\x1b]2;owned\x07"), ("name", "two\nlines"), ("name", "tab\there"), ("name", "c1\x9bJ"),
    ("comment", "\x1b[2J\x1b[Hcleared"), ("comment", "del\x7f"),
])
def test_a_name_or_comment_with_a_control_character_is_refused(tmp_path: Path, field: str, value: str) -> None:
    """Listings show names and comments on other users' and operators' terminals: an escape
    sequence there would rewrite what they see. Refused at submission, saying why."""
    with pytest.raises(BadRequest, match="no control characters"):
        _spec(tmp_path, **{field: value})


def test_a_printable_name_and_comment_are_kept_as_given(tmp_path: Path) -> None:
    spec = _spec(tmp_path, name="résumé — 日本 job", comment="all printable: ✓ <> 'quotes' \"and\" $HOME")
    assert spec.comment == "all printable: ✓ <> 'quotes' \"and\" $HOME"
