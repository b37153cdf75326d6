"""The shapes of the JSON records in an attempt's spool directory.

TypedDicts, so the shepherd stays on the standard library and pays no decoding cost.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict


class AttemptConfig(TypedDict):
    """Written by the execd before the shepherd starts; read by the shepherd."""

    attempt: str  # "<job>.<task>.<attempt>"
    job_id: int
    task_index: int
    attempt_number: int
    is_array: bool
    array_first: int | None  # the array's first and last index and step, for DROVER_ARRAY_*
    array_last: int | None
    array_step: int | None
    array_count: int | None
    name: str
    owner: str  # user name
    node: str
    workdir: str
    submit_dir: str
    stdout: str  # absolute path
    stderr: str | None  # absolute path; None joins stderr into stdout
    open_mode: str  # "append" or "truncate"
    environment: dict[str, str]
    cpus: int
    cpu_ids: list[int]
    memory_mib: int
    time_limit_s: int | None
    kill_grace_s: float  # between the warning signal and SIGKILL
    priority: int
    mail_user: str | None
    mail_type: list[str]
    keep_spool: bool
    stage_out: list[str]  # glob patterns in the working directory


class Usage(TypedDict):
    """What the job used: wait4's rusage of the job and its waited-for children, and wall time."""

    user_cpu_s: float
    sys_cpu_s: float
    max_rss_kib: int
    minor_faults: int
    major_faults: int
    voluntary_switches: int
    involuntary_switches: int
    wall_s: float
    started_at: float  # Unix time
    ended_at: float
    containment: NotRequired[str]  # cgroup-v2, cgroup-v1 or subreaper
    cgroup_peak_memory_bytes: NotRequired[int]  # of the whole attempt, where a cgroup measured it
    cgroup_cpu_s: NotRequired[float]


class ContainmentRecord(TypedDict):
    """Where an attempt's processes are held, written by the shepherd as soon as they are."""

    backend: str  # cgroup-v2, cgroup-v1 or subreaper
    cgroups: dict[str, str]  # v1: controller → the attempt's cgroup; v2: "" → it; subreaper: none
    shepherd: int  # the shepherd's pid: a subreaper's job shares its session when it leads one
    session: int  # the shepherd's session id


class ExitStatus(TypedDict):
    """How the attempt ended. Written last."""

    exit_code: int | None  # None when killed by a signal or never started
    signal: int | None
    failure: str | None  # why the job could not be started, if it was not
    timed_out: bool  # killed at its time limit
    terminated: bool  # killed on request (cancel): warning signal, grace, SIGKILL
    out_of_memory: bool
    methods: NotRequired[list[dict[str, object]]]  # prolog/epilog/PE steps that ran: step, level, exit_code
    shepherd_lost: NotRequired[bool]  # written by the execd: the shepherd died without recording an end
