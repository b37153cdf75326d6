"""The plain-data shapes the fast client paths use are the API's models, field for field."""

from __future__ import annotations

import base64
import typing

import msgspec
import pytest

from drover.protocol.api import (
    ActionResult,
    AttemptInfo,
    DependencyOn,
    JobInfo,
    JobSubmission,
    StagedFile,
    TaskInfo,
)
from drover.protocol.plain import (
    ActionOutcome,
    AttemptSummary,
    DependencyRequest,
    DependencySummary,
    JobRequest,
    JobSummary,
    StagedFileRequest,
    TaskSummary,
)


def _required(struct: type[msgspec.Struct]) -> set[str]:
    return {f.name for f in msgspec.structs.fields(struct) if f.required}


def test_the_fields_and_the_required_ones_are_the_same() -> None:
    assert set(typing.get_type_hints(JobRequest)) == {f.name for f in msgspec.structs.fields(JobSubmission)}
    assert set(JobRequest.__required_keys__) == _required(JobSubmission)
    assert set(typing.get_type_hints(StagedFileRequest)) == {f.name for f in msgspec.structs.fields(StagedFile)}
    assert set(typing.get_type_hints(DependencyRequest)) == {f.name for f in msgspec.structs.fields(DependencyOn)}
    assert set(DependencyRequest.__required_keys__) == _required(DependencyOn)


SUMMARIES = {JobSummary: JobInfo, TaskSummary: TaskInfo, DependencySummary: DependencyOn, AttemptSummary: AttemptInfo, ActionOutcome: ActionResult}


def _spelled(kind: object) -> str:
    """A type as text, each summary named as the model it summarises."""
    text = str(kind)
    for summary, model in SUMMARIES.items():
        text = text.replace(f"{summary.__module__}.{summary.__name__}", f"{model.__module__}.{model.__name__}")
    return text


@pytest.mark.parametrize(("summary", "model"), list(SUMMARIES.items()), ids=lambda t: t.__name__)
def test_each_field_read_as_plain_data_is_the_models_with_its_type(summary: type, model: type[msgspec.Struct]) -> None:
    fields = {f.name: _spelled(f.type) for f in msgspec.structs.fields(model)}
    for name, kind in typing.get_type_hints(summary).items():
        assert name in fields, f"{summary.__name__}.{name} is not a field of {model.__name__}"
        assert _spelled(kind) == fields[name], name
    if summary in (JobSummary, ActionOutcome):  # the whole reply
        assert set(typing.get_type_hints(summary)) == set(fields)


def test_a_request_with_every_field_is_a_valid_submission() -> None:
    request: JobRequest = {
        "script": "echo hi\n", "name": "j", "workdir": "/tmp", "submit_dir": "/tmp", "output": "o", "error": None,
        "open_mode": "append", "environment": {"A": "1"}, "cpus": 2, "memory_mib": 10, "time_limit_s": 60,
        "array": "1-3", "hold": True, "priority": 1, "after_ok": [1], "mail_user": "ann", "mail_type": ["END"],
        "keep_spool": True, "event_log": "/tmp/e", "zap": False, "done_output": "d", "mail_output": True, "stage_in": [{"name": "f", "data": base64.b64encode(b"x").decode(),
                                                                   "mode": 0o600}],
        "stage_out": ["*.out"], "prolog": "true", "epilog": "true", "epilog_sets_exit": True,
        "warn_signal": "SIGUSR1", "warn_before_s": 30, "checkpoint_signal": "SIGUSR2", "rerunnable": False,
        "pty": False, "queue": "default", "credential": "MUNGE:x:",
        "dependencies": [{"kind": "afterany", "job": 2, "task": 3, "per_task": False}], "dependency_any": True,
        "kill_on_invalid_dep": False, "begin_at": 1.5, "gres": ["gpu:a100:1"], "licenses": {"matlab": 2},
        "constraint": "avx512&bigmem", "exclusive": True, "resource_requests": {"arch": "lx-amd64"},
        "environments": ["gcc13", "cuda"],
        "pe": "mpi", "pe_slots": "2-8", "pe_per_node": 2, "pids_max": 256, "notify": True,
        "checkpoint": "blcr", "checkpoint_occasion": "sx",
    }
    assert set(request) == set(typing.get_type_hints(JobRequest))
    submission = msgspec.json.decode(msgspec.json.encode(request), type=JobSubmission)
    assert submission.stage_in[0].data == b"x"
    assert msgspec.to_builtins(submission) == request
