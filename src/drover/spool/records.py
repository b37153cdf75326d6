"""The shapes of the JSON records in an attempt's spool directory.

TypedDicts, so the shepherd stays on the standard library and pays no decoding cost.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict


class AttemptOrder(TypedDict):
    """What the controller orders a node to run (the `config` of a StartAttempt message, checked
    against this type when the node decodes it): everything about the attempt that is the job's."""

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
    workdir: str  # absolute; "" until the node gives the job a scratch directory
    submit_dir: str
    stdout: str  # absolute (relative to the scratch directory while workdir is "")
    stderr: str | None  # None joins stderr into stdout
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
    job_prolog: str | None  # the job's own methods (Accelerator's precmd and postcmd)
    job_epilog: str | None
    epilog_sets_exit: bool
    warn_signal: str | None  # Slurm's --signal=SIG@T: this signal...
    warn_before_s: int  # ...this long before the time limit
    checkpoint_signal: str | None  # what `drover checkpoint` delivers
    rerunnable: bool  # requeued as a new attempt when its shepherd dies
    pty: bool  # an interactive job, on a pseudo-terminal
    queue: str
    queue_prolog: str | None  # the queue's methods (the site's)
    queue_epilog: str | None


class NodeOptions(TypedDict):
    """What the node adds from its own configuration ([execd] of drover.toml): the site's."""

    cluster: str  # the cluster's tag, part of each attempt's cgroup name
    identity_tries: int  # VOV 11: the switch to the owner, tried this often...
    identity_retry_s: float  # ...this far apart
    diagnostics_setuid: str | None  # VOV 14: the site's script when the switch fails
    chdir_tries: int  # VOV 16: entering the working directory, tried this often...
    chdir_retry_s: float
    diagnostics_chdir: str | None
    node_prolog: str | None  # GE: the node's methods
    node_epilog: str | None
    node_pe_start: str | None
    node_pe_stop: str | None
    method_timeout_s: float
    rlimits: dict[str, int]  # RLIMIT_<NAME> (lower case, without the prefix) → soft = hard limit
    stage_out_limit_bytes: int  # per attempt; what is over is named, not sent


class IdentityRecord(TypedDict):
    """Who the job runs as, resolved by the execd (VOV 6: the owner's groups, cached)."""

    user: str
    uid: int
    gid: int
    groups: list[int]
    home: str
    shell: str


class AttemptConfig(AttemptOrder, NodeOptions):
    """The `config` record: written by the execd before the shepherd starts; read by the
    shepherd. The order, the node's options, and what the node decided for this attempt."""

    identity: IdentityRecord | None  # None: the job runs as the shepherd's own user
    scratch: bool  # the job runs in a scratch directory of its own in the spool


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
