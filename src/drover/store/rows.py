"""Rows to domain records and back: how a job, task, attempt or event is laid out in the store's
tables, the same for every backend (JSON columns are text, flags are integers). No I/O."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from drover.core import suspension
from drover.core.arrays import TaskIndices
from drover.core.dependencies import Dependencies, Dependency
from drover.core.job import Attempt, Job, JobPayload, Task, payload_bytes, split_payload
from drover.core.job_spec import JobSpec
from drover.core.job_state import JobState
from drover.core.resources import Resources
from drover.protocol.canonical import canonical
from drover.store.base import EventRecord

_ENCODER = msgspec.json.Encoder()


def dumps(value: Any) -> str:
    """A stored column's JSON text: msgspec's encoder, a tenth of the standard library's time (a
    job writes some twenty such columns and event details); text kept as UTF-8, not escaped."""
    return _ENCODER.encode(value).decode()
_decode = msgspec.json.decode

JOB_COLUMNS = (
    "id, owner, name, submitted_at, priority, cpus, memory_mib, indices, is_array, max_running, "
    "after_ok, spec, fresh_from, fresh_state, fresh_skip, ended_at, state, end_reason, event_log_node, "
    "dependencies, begin_at, payload_bytes"
)
PAYLOAD_COLUMNS = "job_id, script, environment, stage_in"
TASK_COLUMNS = ("job_id", "idx", "state", "state_since", "attempt", "cancel_requested", "exit_status",
                "requeue_requested", "hold_requested", "suspended_by")
ATTEMPT_COLUMNS = ("job_id", "idx", "number", "node", "cpu_ids", "dispatched_at", "started_at", "ended_at",
                   "exit", "usage", "cleanup", "gres", "others", "pe_tasks", "after", "moving_to")
EVENT_COLUMNS = "seq, time, job_id, idx, attempt, kind, detail"


def spec_text(spec: JobSpec) -> str:
    """The spec as stored: its canonical encoding, the bytes a signature over it covers. Every
    field is written, defaults too: an older Drover reads some keys without a default."""
    return canonical(spec).decode()


_spec_decoder = msgspec.json.Decoder(JobSpec)


def spec_from_text(text: str) -> JobSpec:
    """The one place a stored spec is read. A key an older Drover did not write gets its default
    (core/job_spec.py); a key this Drover does not know is ignored: a newer Drover's (after a
    downgrade), or the payload an older one kept in the spec (split_payload reads that)."""
    return _spec_decoder.decode(text)


def job_row(job: Job) -> tuple[Any, ...]:
    return (
        job.id, job.owner, job.name, job.submitted_at, job.priority, job.resources.cpus,
        job.resources.memory_mib, dumps([list(r) for r in job.indices.ranges]), int(job.is_array),
        job.max_running, "[]", spec_text(job.spec), job.fresh_from,  # after_ok: superseded (migration 0011)
        job.fresh_state.value, dumps(sorted(job.fresh_skip)), job.ended_at,
        job.state.value if job.state else None, job.end_reason, job.event_log_node,
        _dependencies_text(job.dependencies), job.begin_at, job.payload_bytes,
    )


def job_from_row(row: Sequence[Any]) -> Job:
    """A row of JOB_COLUMNS. A spec stored by an older Drover holds the job's payload: it is
    weighed and left out (the store reads it from there when an order is made)."""
    try:
        spec = spec_from_text(row[11])
    except msgspec.ValidationError as error:  # written by hand, or by a Drover whose spec had other types
        raise ValueError(f"job {row[0]}: its stored spec does not read as a job spec: {error}") from None
    weight = row[21]
    if weight is None:  # stored before payloads were weighed: an older Drover kept the payload in the spec
        legacy = split_payload(json.loads(row[11]))
        weight = payload_bytes(legacy) if legacy is not None else 0
    return Job(
        id=row[0], owner=row[1], name=row[2], submitted_at=row[3], priority=row[4],
        resources=Resources(row[5], row[6]),
        indices=TaskIndices(tuple(tuple(r) for r in json.loads(row[7]))),
        is_array=bool(row[8]), max_running=row[9], dependencies=_dependencies(row[19]),
        spec=spec, fresh_from=row[12], fresh_state=JobState(row[13]),
        fresh_skip=set(json.loads(row[14])), ended_at=row[15],
        state=JobState(row[16]) if row[16] else None, end_reason=row[17], event_log_node=row[18],
        begin_at=row[20], payload_bytes=weight,
    )


def payload_row(job_id: int, payload: JobPayload) -> tuple[Any, ...]:
    """A row of PAYLOAD_COLUMNS: the script as it is (no encoding to undo), the rest as JSON."""
    return job_id, payload["script"], dumps(payload["environment"]), dumps(payload["stage_in"])


def payload_from_row(row: Sequence[Any]) -> JobPayload:
    """Read for every job a pass starts: the usual empty environment and file list cost nothing."""
    environment, stage_in = row[2], row[3]
    return {"script": row[1], "environment": {} if environment == "{}" else _decode(environment),
            "stage_in": [] if stage_in == "[]" else _decode(stage_in)}


def task_row(t: Task) -> tuple[Any, ...]:
    return (t.job_id, t.index, t.state.value, t.state_since, t.attempt, int(t.cancel_requested), t.exit_status,
            int(t.requeue_requested), int(t.hold_requested), suspension.text(t.suspended_by))


def tasks_from_rows(rows: Iterable[Sequence[Any]]) -> dict[int, Task]:
    return {
        row[1]: Task(row[0], row[1], JobState(row[2]), row[3], row[4], bool(row[5]), row[6], bool(row[7]),
                     bool(row[8]), suspension.parse(row[9]))
        for row in rows
    }


def attempt_row(a: Attempt) -> tuple[Any, ...]:
    return (a.job_id, a.index, a.number, a.node, dumps(list(a.cpu_ids)), a.dispatched_at,
            a.started_at, a.ended_at, dumps(a.exit) if a.exit is not None else None,
            dumps(a.usage) if a.usage is not None else None,
            dumps(a.cleanup) if a.cleanup is not None else None,
            dumps(a.gres) if a.gres else None,
            dumps([[node, list(cpu_ids)] for node, cpu_ids in a.others]) if a.others else None,
            dumps(a.pe_tasks) if a.pe_tasks else None, a.after,
            dumps(list(a.moving_to)) if a.moving_to is not None else None)


def attempt_from_row(row: Sequence[Any]) -> Attempt:
    return Attempt(
        job_id=row[0], index=row[1], number=row[2], node=row[3], cpu_ids=tuple(json.loads(row[4])),
        dispatched_at=row[5], started_at=row[6], ended_at=row[7],
        exit=json.loads(row[8]) if row[8] else None, usage=json.loads(row[9]) if row[9] else None,
        cleanup=json.loads(row[10]) if row[10] else None,
        gres={name: tuple(indices) for name, indices in json.loads(row[11]).items()} if len(row) > 11 and row[11] else {},
        others=tuple((node, tuple(cpu_ids)) for node, cpu_ids in json.loads(row[12])) if len(row) > 12 and row[12] else (),
        pe_tasks=json.loads(row[13]) if len(row) > 13 and row[13] else [],
        after=row[14] if len(row) > 14 else None,
        moving_to=tuple(json.loads(row[15])) if len(row) > 15 and row[15] else None,
    )


def event_from_row(row: Sequence[Any]) -> tuple[int, EventRecord]:
    """A row of EVENT_COLUMNS."""
    return row[0], EventRecord(row[1], row[5], row[2], row[3], row[4], json.loads(row[6]), row[0])


def _dependencies_text(dependencies: Dependencies) -> str | None:
    if not dependencies:
        return None
    return dumps({"any": dependencies.any, "on": [d.to_json() for d in dependencies.on]})


def _dependencies(text: str | None) -> Dependencies:
    if not text:
        return Dependencies()
    record = json.loads(text)
    return Dependencies(tuple(Dependency.from_json(d) for d in record["on"]), bool(record.get("any")))
