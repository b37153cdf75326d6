"""The attempt's `config` record as the shepherd reads it: decoded once, at step 2 of its
sequence (main.read_attempt_config), into a frozen, typed ShepherdConfig.

The record on disk is the execd's (drover.records.AttemptConfig: the controller's order and the
node's options, as JSON). The shepherd keeps of it only what it uses, under the same names, and
states here, once, what each key the record may lack means: every other module reads fields.
The job's spec is the exception: it is kept whole as `job` (drover.records.JobRecord, generated
from core/job_spec.py), every field there, so an option the shepherd uses is read as
`config.job["NAME"]` where it is used, with no line here. Should the record's layout change,
this decoder is what follows it (records.config_in_current_layout reads the earlier one).

A frozen dataclass, not a msgspec Struct: the shepherd imports only the standard library (see
docs/architecture.md), and a fork of the shepherd's code for each attempt must stay cheap.
Nested records (the owner's identity, a checkpoint environment, a parallel job's other hosts,
the named environments) keep their TypedDicts of drover.records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from drover.records import (
    AttemptCheckpoint,
    EnvironmentRecord,
    IdentityRecord,
    JobRecord,
    PeHostRecord,
    config_in_current_layout,
)

STAGE_OUT_LIMIT_BYTES = 64 * 1024 * 1024  # per attempt, where the node says nothing


# Neither __eq__ nor __repr__: for some 90 fields each costs as much to generate as the rest of
# the class, at every start of a shepherd run by hand (the fork server imports it once).
@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ShepherdConfig:
    # The job's: the order's keys the shepherd cannot do without.
    job_id: int
    task_index: int
    attempt_number: int
    is_array: bool
    array_first: int | None
    array_last: int | None
    array_step: int | None
    array_count: int | None
    name: str
    owner: str
    node: str
    workdir: str
    stdout: str
    stderr: str | None  # None joins stderr into stdout
    environment: dict[str, str]
    cpus: int
    cpu_ids: list[int]
    memory_mib: int
    kill_grace_s: float
    priority: int
    # The job's spec, whole (records.JobRecord, generated from core/job_spec.py): config.job["NAME"].
    job: JobRecord
    # The attempt's, that the shepherd does without.
    scratch: bool
    gres: dict[str, list[int]]
    queue_nice: int
    containment_name: str | None
    # The methods around the job and in its place (methods.py, control.py, starter.py).
    queue_prolog: str | None
    queue_epilog: str | None
    node_prolog: str | None
    node_epilog: str | None
    node_pe_start: str | None
    node_pe_stop: str | None
    queue_starter_method: str | None
    starter_method: str | None
    queue_suspend_method: str | None
    queue_resume_method: str | None
    queue_terminate_method: str | None
    node_suspend_method: str | None
    node_resume_method: str | None
    node_terminate_method: str | None
    notify_s: int | None
    environments: list[EnvironmentRecord]
    checkpoint: AttemptCheckpoint | None
    # A parallel environment's (parallel.py).
    pe_start: str | None
    pe_start_as_site: bool
    pe_stop: str | None
    pe_stop_as_site: bool
    pe_hosts: list[PeHostRecord]
    pe_task: str | None
    # jobd's output options (outputs.py).
    done_output: str | None
    # The node's.
    cluster: str
    identity: IdentityRecord | None  # None: the job runs as the shepherd's own user
    identity_tries: int
    identity_retry_s: float
    diagnostics_setuid: str | None
    diagnostics_chdir: str | None
    diagnostics_identity: IdentityRecord | None
    chdir_tries: int
    chdir_retry_s: float
    method_timeout_s: float
    rlimits: dict[str, int]
    stage_out_limit_bytes: int
    pids_max: int  # 0: none
    node_gpus: int
    debug_pause_s: float


def read_config(record: Mapping[str, Any]) -> ShepherdConfig:
    """The record as the execd wrote it (JSON, decoded), as the shepherd reads it. A key the
    shepherd needs that is missing raises KeyError; each other key's default is the one below.
    The job's spec is kept whole, as `job`: an option is read where it is used."""
    raw = config_in_current_layout(dict(record))  # an older execd's record, of an attempt re-attached
    return ShepherdConfig(
        job=raw["job"],
        job_id=int(raw["job_id"]), task_index=int(raw["task_index"]), attempt_number=int(raw["attempt_number"]),
        is_array=bool(raw["is_array"]), array_first=raw.get("array_first"), array_last=raw.get("array_last"),
        array_step=raw.get("array_step"), array_count=raw.get("array_count"),
        name=str(raw["name"]), owner=str(raw["owner"]), node=str(raw["node"]), workdir=str(raw["workdir"]),
        stdout=str(raw["stdout"]), stderr=_text(raw["stderr"]), environment=dict(raw["environment"]),
        cpus=int(raw["cpus"]),
        cpu_ids=list(raw["cpu_ids"]), memory_mib=int(raw["memory_mib"]),
        kill_grace_s=float(raw["kill_grace_s"]), priority=int(raw["priority"]),
        scratch=bool(raw.get("scratch")),
        gres=dict(raw.get("gres") or {}),
        queue_nice=int(raw.get("queue_nice", 0)),
        containment_name=_text(raw.get("containment_name")),
        queue_prolog=_text(raw.get("queue_prolog")), queue_epilog=_text(raw.get("queue_epilog")),
        node_prolog=_text(raw.get("node_prolog")), node_epilog=_text(raw.get("node_epilog")),
        node_pe_start=_text(raw.get("node_pe_start")), node_pe_stop=_text(raw.get("node_pe_stop")),
        queue_starter_method=_text(raw.get("queue_starter_method")), starter_method=_text(raw.get("starter_method")),
        queue_suspend_method=_text(raw.get("queue_suspend_method")), queue_resume_method=_text(raw.get("queue_resume_method")),
        queue_terminate_method=_text(raw.get("queue_terminate_method")), node_suspend_method=_text(raw.get("node_suspend_method")),
        node_resume_method=_text(raw.get("node_resume_method")), node_terminate_method=_text(raw.get("node_terminate_method")),
        notify_s=raw.get("notify_s"),
        environments=list(raw.get("environments") or []),
        checkpoint=raw.get("checkpoint"),
        pe_start=_text(raw.get("pe_start")),
        pe_start_as_site=bool(raw.get("pe_start_as_site", False)),
        pe_stop=_text(raw.get("pe_stop")),
        pe_stop_as_site=bool(raw.get("pe_stop_as_site", False)),
        pe_hosts=list(raw.get("pe_hosts") or []),
        pe_task=_text(raw.get("pe_task")),
        done_output=_text(raw.get("done_output")),
        cluster=str(raw.get("cluster", "")),
        identity=raw.get("identity"),
        identity_tries=int(raw.get("identity_tries", 3)),  # VOV 11: 3 tries...
        identity_retry_s=float(raw.get("identity_retry_s", 10.0)),  # ...10 s apart
        diagnostics_setuid=_text(raw.get("diagnostics_setuid")),
        diagnostics_chdir=_text(raw.get("diagnostics_chdir")),
        diagnostics_identity=raw.get("diagnostics_identity"),
        chdir_tries=int(raw.get("chdir_tries", 3)),
        chdir_retry_s=float(raw.get("chdir_retry_s", 2.0)),
        method_timeout_s=float(raw.get("method_timeout_s", 600.0)),
        rlimits=dict(raw.get("rlimits") or {}),
        stage_out_limit_bytes=int(raw.get("stage_out_limit_bytes", STAGE_OUT_LIMIT_BYTES)),
        pids_max=int(raw.get("pids_max") or 0),
        node_gpus=int(raw.get("node_gpus", 0)),
        debug_pause_s=float(raw.get("debug_pause_s") or 0.0),
    )



def _text(value: object) -> str | None:
    """A command, a path or a name: text, or None where there is none (or it is not text)."""
    return value if isinstance(value, str) else None
