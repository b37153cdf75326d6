"""The plain-data shapes the fast client paths use are the API's models, field for field:
protocol/plain.py is what scripts/plain_shapes.py writes from them."""

from __future__ import annotations

import base64
import pathlib
import subprocess
import sys
import types
import typing
from typing import Annotated, Literal

import msgspec
import pytest
from tests.helpers.scripts import script_module

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

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_plain_py_is_what_the_script_writes_from_the_models() -> None:
    generated = script_module("plain_shapes").generated()
    assert generated == (ROOT / "src" / "drover" / "protocol" / "plain.py").read_text(), (
        "src/drover/protocol/plain.py is out of date: run .venv/bin/python scripts/plain_shapes.py")


def test_plain_py_imports_without_msgspec() -> None:
    code = "import sys; sys.modules['msgspec'] = None; import drover.protocol.plain as p; print(p.JobRequest.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "JobRequest\n", done.stderr


# Models shaped unlike protocol/api.py's: the script reads whatever the models are when it runs.
class _Attachment(msgspec.Struct):
    blob: bytes  # base64 in JSON


class _Common(msgspec.Struct, kw_only=True):
    # Two lines above a field
    # are carried over above it.
    script: str
    mode: Literal["a", "b"] = "a"  # one of two


class _Reshaped(_Common, kw_only=True, rename={"size": "size_mib"}):
    size: Annotated[int, msgspec.Meta(ge=0)] | None = None  # its name on the wire is size_mib
    files: list[_Attachment] = []
    extra: dict[str, typing.Any] = {}


def test_the_script_follows_a_reshaped_model_its_bases_renames_and_comments(monkeypatch: pytest.MonkeyPatch) -> None:
    generator = script_module("plain_shapes")
    monkeypatch.setattr(generator, "api", types.SimpleNamespace(Reshaped=_Reshaped, Attachment=_Attachment))
    imports: set[str] = set()
    names: dict[type, str] = {}
    attachment = generator.Shape("AttachmentRequest", "Attachment", "{model}.", sent=True)
    assert generator.written(attachment, names, imports) == (
        'class AttachmentRequest(TypedDict):\n'
        f'    """{__name__}._Attachment."""\n'
        '\n'
        '    blob: str  # base64 in JSON\n')
    with pytest.raises(generator.ShapeError, match=r"_Reshaped.files holds .*_Attachment, which has no plain shape"):
        generator.written(generator.Shape("ReshapedRequest", "Reshaped", "{model}.", sent=True), names, imports)
    names[_Attachment] = "AttachmentRequest"
    reshaped = generator.Shape("ReshapedRequest", "Reshaped", "{model}.", sent=True)
    assert generator.written(reshaped, names, imports) == (
        'class ReshapedRequest(TypedDict, total=False):\n'
        f'    """{__name__}._Reshaped."""\n'
        '\n'
        '    # Two lines above a field\n'
        '    # are carried over above it.\n'
        '    script: Required[str]\n'
        "    mode: Literal['a', 'b']  # one of two\n"
        '    size_mib: int | None  # its name on the wire is size_mib\n'
        '    files: list[AttachmentRequest]\n'
        '    extra: dict[str, Any]\n')
    assert imports == {"Required", "Literal", "Any"}
    summary = generator.Shape("ReshapedSummary", "Reshaped", "{model}.", sent=False, keys=("script", "nothing"))
    with pytest.raises(generator.ShapeError, match="ReshapedSummary.nothing is not a field of"):
        generator.written(summary, {}, imports)


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
        "checkpoint": "blcr", "checkpoint_occasion": "sx", "comment": "a note",
    }
    assert set(request) == set(typing.get_type_hints(JobRequest))
    submission = msgspec.json.decode(msgspec.json.encode(request), type=JobSubmission)
    assert submission.stage_in[0].data == b"x"
    assert msgspec.to_builtins(submission) == request
