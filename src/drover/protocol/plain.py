"""The API's shapes as plain data, for the client's fast paths: `drover submit`, `wait`, `run`
and the actions, and the front ends, which must start in a few tens of milliseconds and so never
import msgspec (about 18 ms) to build a request or read a reply.

The msgspec models of protocol/api.py are the truth; tests/unit/api/test_plain_shapes.py fails
if a shape here differs from its model's fields (names, types, required ones; the summaries
name only some of a model's fields), and the controller
validates every request against the model (unknown fields refused).
"""

# No `from __future__ import annotations`: TypedDict reads Required[] only from evaluated annotations.
from typing import Required, TypedDict


class StagedFileRequest(TypedDict):
    name: str
    data: str  # base64
    mode: int


class DependencyRequest(TypedDict, total=False):
    kind: Required[str]
    job: int
    task: int | None
    per_task: bool


class JobRequest(TypedDict, total=False):
    script: Required[str]
    name: str
    workdir: Required[str]
    submit_dir: str
    output: str | None
    error: str | None
    open_mode: str
    environment: dict[str, str]
    cpus: int
    memory_mib: int
    time_limit_s: int | None
    array: str | None
    hold: bool
    priority: int
    after_ok: list[int]
    dependencies: list[DependencyRequest]
    dependency_any: bool
    kill_on_invalid_dep: bool
    begin_at: float | None
    mail_user: str | None
    mail_type: list[str]
    keep_spool: bool
    event_log: str | None
    zap: bool
    done_output: str | None
    mail_output: bool
    stage_in: list[StagedFileRequest]
    stage_out: list[str]
    prolog: str | None
    epilog: str | None
    epilog_sets_exit: bool
    warn_signal: str | None
    warn_before_s: int
    checkpoint_signal: str | None
    rerunnable: bool
    pty: bool
    queue: str
    gres: list[str]
    licenses: dict[str, int]
    constraint: str | None
    exclusive: bool
    resource_requests: dict[str, str]
    credential: str | None
    environments: list[str]  # named environments of the cluster, switched to in order
    pe: str | None
    pe_slots: str | None
    pe_per_node: int | None
    pids_max: int | None
    notify: bool
    checkpoint: str | None
    checkpoint_occasion: str | None


class AttemptSummary(TypedDict):
    """Of api.AttemptInfo, what the fast paths read."""

    number: int
    node: str
    pty_socket: str | None


class TaskSummary(TypedDict):
    """Of api.TaskInfo, what the fast paths read."""

    index: int
    state: str
    exit_status: int | None
    attempts: list[AttemptSummary]


class DependencySummary(TypedDict):
    """api.DependencyOn, as a job's summary shows it."""

    kind: str
    job: int
    task: int | None
    per_task: bool


class JobSummary(TypedDict):
    """api.JobInfo, what a long poll on a job answers with."""

    id: int
    name: str
    owner: str
    state: str
    queue: str
    submitted_at: float
    ended_at: float | None
    priority: int
    cpus: int
    memory_mib: int
    time_limit_s: int | None
    array: str | None
    max_running: int | None
    task_counts: dict[str, int]
    pending_reason: str | None
    pending_explanation: str | None
    exit_status: int | None
    end_reason: str | None
    workdir: str
    submit_dir: str
    output: str
    error: str | None
    after_ok: list[int]
    dependencies: list[DependencySummary]
    dependency_any: bool
    begin_at: float | None
    gres: list[str]
    licenses: dict[str, int]
    constraint: str | None
    exclusive: bool
    tasks: list[TaskSummary]
    pe: str | None
    pe_per_node: int | None
    notify: bool
    checkpoint: str | None


class WaitReply(TypedDict):
    ended: bool
    job: JobSummary


class ActionOutcome(TypedDict):
    """api.ActionResult: one reference's outcome of an action (cancel, hold, signal...)."""

    ref: str
    ok: bool
    message: str
    kind: str
