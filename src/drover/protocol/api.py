"""HTTP request and response models of the public API; the source of the OpenAPI schema.

The client side decodes responses into these models on demand; the fastest commands (submit,
wait) send and read the same JSON without importing this module, to keep start-up short.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from drover.core.job_spec import JobOptions
from drover.records import CleanupProgress

# An operator's or a queue owner's reason, which listings show on everyone's terminal: at most
# 1000 characters of one line, no control character (core/shown_text.py checks it again, for
# the newline a regular expression's `$` lets through at the end).
ShownReason = Annotated[str, msgspec.Meta(max_length=1000, pattern=r"^[^\x00-\x1f\x7f-\x9f]*$")]


class StagedFile(msgspec.Struct, forbid_unknown_fields=True):
    name: str  # relative path in the job's working directory
    data: bytes  # base64 in JSON
    mode: int = 0o644


class DependencyOn(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """One thing a job waits for (core/dependencies.py has the semantics)."""

    kind: str  # after, afterok, afternotok, afterany, singleton
    job: int = 0  # 0 for singleton
    task: int | None = None  # one array task of `job`, or the whole job
    per_task: bool = False  # task N waits for task N of `job` (aftercorr, qsub -hold_jid_ad)


# The options a submission shares with the stored spec are core/job_spec.py's `JobOptions`; the
# fields below are the submission's own, or have another form in the stored spec. (Its docstring
# is the OpenAPI document's description of it.)
class JobSubmission(JobOptions, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One job as the user asked for it. Defaults are the zero-configuration ones."""

    script: str
    name: str = "job"
    workdir: str  # absolute; "" runs the job in a scratch directory of its own on the node
    output: str | None = None  # pattern with %j %a %x %u; default drover-%j.out (arrays drover-%j_%a.out)
    environment: dict[str, str] = {}
    cpus: int = 1
    memory_mib: int = 0
    array: str | None = None  # "1-100:2%5"
    hold: bool = False
    priority: int = 0
    after_ok: list[int] = []  # run only once all these jobs completed successfully (= afterok dependencies)
    dependencies: list[DependencyOn] = []
    dependency_any: bool = False  # one of `dependencies` met is enough (Slurm's `?`); else all must be
    begin_at: float | None = None  # a Unix time: the job starts no earlier (sbatch --begin, qsub -a)
    stage_in: list[StagedFile] = []  # copied into the job's working directory before it starts
    # Grid Engine's -l NAME=VALUE beyond time and memory: the controller reads each as a licence,
    # a generic resource or a node feature, by what the cluster has of that name.
    resource_requests: dict[str, str] = {}
    # Grid Engine's -pe NAME SLOTS: the slots of its `pe`, a number or a range n-m (each slot a
    # CPU of the job's node; controller/handlers/parallel_envs.py).
    pe_slots: str | None = None
    # qsub -c: occasion letters of s m x n r, or an interval, with its `checkpoint` (core/checkpoints.py).
    checkpoint_occasion: str | None = None


class SubmitRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Many jobs in one request: one transaction, one reply."""

    jobs: Annotated[list[JobSubmission], msgspec.Meta(min_length=1)]
    # Chosen by the client, new for each submission: the same request sent again (a retry after
    # a timeout or a lost connection) gets the first one's ids, and no second copy of its jobs.
    request_key: str | None = None


class SubmitReply(msgspec.Struct):
    ids: list[int]


class Usage(msgspec.Struct, kw_only=True):
    user_cpu_s: float = 0.0
    sys_cpu_s: float = 0.0
    max_rss_kib: int = 0
    minor_faults: int = 0
    major_faults: int = 0
    voluntary_switches: int = 0
    involuntary_switches: int = 0
    wall_s: float = 0.0
    started_at: float = 0.0
    ended_at: float = 0.0
    containment: str | None = None  # cgroup-v2, cgroup-v1 or subreaper
    cgroup_peak_memory_bytes: int | None = None  # the whole attempt, where a cgroup measured it
    cgroup_cpu_s: float | None = None
    # The shepherd's high-water mark the job's first process started from (docs/accounting.md,
    # Max RSS): where max_rss_kib is 0, not known, every process stayed at or under it. None
    # where it was not read, or from a node that does not say it.
    max_rss_inherited_kib: int | None = None


class AttemptInfo(msgspec.Struct, kw_only=True):
    number: int
    node: str
    cpu_ids: list[int]
    dispatched_at: float
    started_at: float | None = None
    ended_at: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    failure: str | None = None
    timed_out: bool = False
    terminated: bool = False
    out_of_memory: bool = False
    # It hit its process limit: forks refused at its cgroup's pids.max (pids_max), and that limit.
    pids_refused: int = 0
    pids_max: int | None = None
    usage: Usage | None = None
    cleanup: CleanupProgress | None = None  # how far the node's cleanup pipeline got
    pty_socket: str | None = None  # where `drover run --pty` reaches a running interactive job
    gres: dict[str, list[int]] = {}  # the devices it was given on its node: name → indices ({"gpu": [0, 2]})
    # A parallel job's other nodes and the CPUs it holds on each ({"n2": [0, 1]}); `node` is its master.
    other_nodes: dict[str, list[int]] = {}
    # The tasks the attempt started on its hosts (qrsh -inherit; docs/parallel-environments.md).
    pe_tasks: list[PeTaskInfo] = []
    # What went wrong that did not change how the job ended (an output file on a full filesystem).
    notes: list[str] = []
    # Promised, not started yet: the attempt on its node whose end it starts at ([scheduler] promises).
    after: str | None = None


class TaskInfo(msgspec.Struct, kw_only=True):
    index: int
    state: str
    state_since: float
    cancel_requested: bool = False
    exit_status: int | None = None  # what a shell would show: exit code, or 128 + signal
    # Why its attempt is to be frozen: "job" (its own suspend), "queue" (its queue instance is
    # suspended), both, or none (core/suspension.py).
    suspended_by: list[str] = []
    stdout: str | None = None
    stderr: str | None = None
    attempts: list[AttemptInfo] = []


class JobInfo(msgspec.Struct, kw_only=True):
    id: int
    name: str
    owner: str
    state: str  # the job as a whole (see core.views.job_state)
    queue: str = "default"
    submitted_at: float
    ended_at: float | None = None
    priority: int
    cpus: int
    memory_mib: int
    time_limit_s: int | None
    array: str | None  # the array's indices, compact ("1-100:2"), or None
    max_running: int | None = None
    task_counts: dict[str, int]  # state → number of tasks
    pending_reason: str | None = None
    pending_explanation: str | None = None
    exit_status: int | None = None  # 0 when every task completed; else the first failure's
    end_reason: str | None = None  # why the controller ended the job itself (an internal error)
    workdir: str  # "" when the job runs in a scratch directory on its node
    submit_dir: str = ""
    output: str
    error: str | None
    after_ok: list[int] = []  # its afterok dependencies on whole jobs (older clients read these)
    dependencies: list[DependencyOn] = []
    dependency_any: bool = False
    begin_at: float | None = None
    gres: list[str] = []  # what each task needs beyond CPUs and memory, as submitted (canonical)
    licenses: dict[str, int] = {}
    constraint: str | None = None
    exclusive: bool = False
    tasks: list[TaskInfo] = []  # filled by GET /v1/jobs/{id}; the listing leaves it empty
    pe: str | None = None  # its parallel environment; its slots are its CPUs
    pe_per_node: int | None = None  # its slots on each node, in place of its PE's rule
    notify: bool = False  # submitted with --notify (qsub -notify)
    checkpoint: str | None = None  # its checkpoint environment ([checkpoints.NAME]) and occasions: "blcr (sx)"
    # The spec's options marked to be shown (core/job_spec.py) that the job set, by label, as text.
    options: dict[str, str] = {}


class FileInfo(msgspec.Struct, kw_only=True):
    task: int
    attempt: int
    name: str
    size: int


class FileList(msgspec.Struct):
    files: list[FileInfo]
    skipped: list[str] = []


class JobList(msgspec.Struct):
    jobs: list[JobInfo]  # in id order
    next_before: int | None = None  # a full page: pass this as `before` for the next, older page


class HistoryRow(msgspec.Struct, kw_only=True):
    job_id: int
    index: int
    is_array: bool
    attempt: int
    name: str
    owner: str
    state: str
    node: str
    exit_status: int | None
    submitted_at: float
    started_at: float | None
    ended_at: float | None
    usage: Usage | None
    # The accounting record (docs/accounting.md): where and as whom it ran, what it asked for and
    # what it used. `group` is the owner's primary group as the controller's host resolves it.
    group: str = ""
    queue: str = "default"
    priority: int = 0
    eligible_at: float | None = None  # the later of submission, begin time and the previous attempt's end
    wait_s: float | None = None  # start - eligible
    wall_s: float | None = None  # end - start
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None  # why it ended so: TimeLimit, OutOfMemory, Cancelled, NonZeroExitCode...
    cpu_user_s: float | None = None
    cpu_sys_s: float | None = None
    cpu_s: float | None = None  # the cgroup's CPU time where one measured it, else user + system
    max_rss_kib: int | None = None
    cgroup_peak_bytes: int | None = None
    read_bytes: int | None = None  # where the node recorded them
    write_bytes: int | None = None
    cpus: int = 1  # requested
    memory_mib: int = 0  # requested; 0: none
    time_limit_s: int | None = None  # requested
    cpu_efficiency: float | None = None  # cpu_s / (cpus × wall_s)
    memory_efficiency: float | None = None  # peak / memory requested
    time_efficiency: float | None = None  # wall_s / time_limit_s


class History(msgspec.Struct):
    rows: list[HistoryRow]  # newest last
    next_before: str | None = None  # a full page: pass this as `before` for the next, older page


class HistoryGroup(msgspec.Struct, kw_only=True):
    """One group of a history summary (GET /v1/history/summary)."""

    key: str  # the user, queue, node, or day (YYYY-MM-DD, the controller's local time)
    jobs: int
    attempts: int
    cpu_hours: float
    wall_hours: float
    wait_p50_s: float | None = None
    wait_p90_s: float | None = None
    cpu_efficiency_p50: float | None = None
    memory_efficiency_p50: float | None = None


class HistorySummary(msgspec.Struct, kw_only=True):
    by: str  # user, queue, node or day
    groups: list[HistoryGroup]  # in the order of their keys


class ActionRequest(msgspec.Struct, forbid_unknown_fields=True):
    refs: list[str]  # "12" (the whole job) or "12.3" (one task)
    signal: str | None = None  # for the "signal" action: a name such as "USR1" or "SIGUSR1"
    priority: int | None = None  # for the "alter" action
    queue: str | None = None  # for the "alter" action: move the job's waiting tasks to this queue


class ActionResult(msgspec.Struct, kw_only=True):
    ref: str
    ok: bool
    message: str
    kind: str = ""  # when not ok: the error's kind (not_found, conflict, forbidden...; core/errors.py)


class ActionReply(msgspec.Struct):
    results: list[ActionResult]


class OutputChunk(msgspec.Struct, kw_only=True):
    """Part of a task's output file, read on the node that ran it (GET .../output)."""

    node: str
    attempt: int
    offset: int
    data: bytes  # base64 in JSON
    size: int | None  # the file's size when it was read; None: it does not exist (yet)


class SampleInfo(msgspec.Struct, kw_only=True):
    """What a running attempt used at `at`, as its node sampled it (execd/sampling.py)."""

    at: float
    memory_bytes: int  # its cgroup's charge where it has one, else its processes' RSS
    rss_bytes: int
    cpu: float  # cores used since the sample before
    processes: int
    threads: int
    read_bytes: int | None = None
    write_bytes: int | None = None
    cmd: str = ""  # its biggest process's command line, truncated


class AttemptSamples(msgspec.Struct, kw_only=True):
    """A running attempt's latest sample, its peak and averages, and its recent samples (oldest
    first), which `drover show` draws as sparklines."""

    task: int
    attempt: int
    node: str
    latest: SampleInfo
    peak_bytes: int
    memory_average_bytes: int
    cpu_average: float  # cores, on average since the job started
    history: list[SampleInfo] = []


class JobSamples(msgspec.Struct, kw_only=True):
    job_id: int
    attempts: list[AttemptSamples] = []  # only running attempts have samples; kept in memory, never stored


class TopRow(msgspec.Struct, kw_only=True):
    """One running attempt in `drover top`: what it reserved against what it uses now."""

    job_id: int
    task: int
    is_array: bool  # the task is named JOB.TASK
    attempt: int
    name: str
    owner: str
    node: str
    state: str
    cpus: int  # reserved
    cpu: float  # used now, in cores
    cpu_average: float
    memory_bytes: int  # used now
    peak_bytes: int
    memory_mib: int  # requested; 0: none asked for
    started_at: float | None
    runtime_s: float
    processes: int
    threads: int
    cmd: str
    sampled_at: float


class TopList(msgspec.Struct, kw_only=True):
    at: float
    rows: list[TopRow] = []  # the busiest CPU first


class NodeInfo(msgspec.Struct, kw_only=True):
    name: str
    state: str
    cpus: int
    memory_mib: int
    cpus_used: int
    memory_mib_used: int
    running: int
    last_seen: float | None
    reason: str | None = None
    load: float | None = None  # the host's 1-minute load average, from the node's last heartbeat
    memory_free_mib: int | None = None  # memory available on the host, from the same
    local: bool = False  # its execd is on the controller's host (its channel is the local socket)
    gres: str = ""  # its generic resources, counted: "gpu:a100:2,nic:1"
    gres_used: str = ""  # those its tasks hold, with their indices: "gpu:a100:1(IDX:0)"
    features: list[str] = []
    # Its queue instances in error (queue@node, Grid Engine's state E): queue → why. The queue's
    # jobs start here no more, other queues' still do, until an operator clears it.
    queue_errors: dict[str, str] = {}
    suspended_queues: dict[str, str] = {}  # its queue instances suspended (queue@node): queue → by whom and why
    # When it goes away for good (a node inside an outer scheduler's allocation, `drover alloc`):
    # no job starts there that would run past it. None: it stays.
    ends_at: float | None = None


class NodeList(msgspec.Struct):
    nodes: list[NodeInfo]


class QueueInfo(msgspec.Struct, kw_only=True):
    """A queue: where it comes from, its state, its settings in effect, and what it holds now."""

    name: str
    state: str  # open, stopped (takes jobs, starts none), draining (starts its jobs, takes no new), inactive (both)
    reason: str | None = None  # why it was stopped or drained, and by whom
    defined_in: str  # "drover.toml", or "drover queue create" (a user's own queue), or "built in" (default)
    owner: str | None = None  # who manages it besides the cluster's operators
    priority: int = 0
    nice: int = 0  # added to its jobs' nice (jobd's queue nice)
    nodes: list[str] | None = None  # name patterns of the nodes it may use; None: every node
    node_names: list[str] = []  # the nodes those patterns match now
    max_running: int | None = None  # tasks of the queue running at once
    max_running_per_user: int | None = None  # tasks of one user in it running at once
    max_memory_mib: int | None = None  # the most memory a task of it may ask for
    default_time_s: int | None = None
    max_time_s: int | None = None
    window: str | None = None  # when it starts jobs (core/queue_windows.py): "Mon-Fri 18:00-08:00; Sat,Sun"
    window_open: bool = True
    opens_at: float | None = None  # its window is closed: when it opens next
    mail_finished: bool = False  # mail when its last job finishes (jobd's mailfinished)
    pending: int = 0  # tasks waiting in it
    running: int = 0  # tasks of it running
    cpus: int = 0  # CPUs of its nodes that are up
    cpus_used: int = 0
    changed: dict[str, str] = {}  # settings changed with `drover queue set`, over drover.toml's
    # The nodes where it is in error (queue@node, Grid Engine's state E): node → why. Its jobs
    # start there no more until an operator clears it (`drover node resume NODE --queue QUEUE`).
    errors: dict[str, str] = {}
    # Its suspended instances (queue@node, Grid Engine's state s): node → by whom and why. Its
    # jobs there are frozen and none starts there until it is unsuspended (`drover queue unsuspend`).
    suspended: dict[str, str] = {}
    # Grid Engine's queue_conf(5) methods as drover.toml sets them for the queue (None: the
    # node's [execd] method, else the default), and its notify time (docs/methods.md).
    suspend_method: str | None = None
    resume_method: str | None = None
    terminate_method: str | None = None
    notify_s: int = 60


class QueueList(msgspec.Struct):
    queues: list[QueueInfo]


class QueueRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Create a queue, or change one: each setting as text, as `drover queue set` takes it
    (KEY=VALUE: priority, nice, nodes, max_running, max_running_per_user, max_memory, default_time,
    max_time, window, owner); an empty value clears a change (back to drover.toml's)."""

    name: str = ""  # the new queue's name (POST /v1/queues); empty when changing one
    settings: dict[str, str] = {}


class QueueStateRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    reason: ShownReason = ""  # why it is stopped or drained, shown by `drover queue list`


class QueueSuspensionRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    reason: ShownReason = ""  # why it is suspended (unsuspend: unused), shown by `drover queue show`
    node: str | None = None  # the instance on this node (queue@node); None: on every node


class PriorityInfo(msgspec.Struct, kw_only=True):
    """A pending job's multifactor priority: each factor (0..1, the job's own priority as is)
    and the weighted total the planner orders by (docs/scheduling.md)."""

    job_id: int
    owner: str
    queue: str
    age: float
    fairshare: float
    queue_factor: float
    job: int
    total: float


class PriorityWeights(msgspec.Struct, kw_only=True):
    age: float
    fairshare: float
    queue: float
    job: float
    max_age_s: float


class PriorityList(msgspec.Struct):
    weights: PriorityWeights
    jobs: list[PriorityInfo]  # highest total first


class Event(msgspec.Struct, kw_only=True):
    seq: int
    time: float
    job_id: int | None
    index: int | None
    attempt: int | None
    kind: str
    detail: dict[str, Any] = {}


class EventList(msgspec.Struct):
    events: list[Event]


class Ping(msgspec.Struct, kw_only=True):
    version: str
    api: str
    user: str
    started_at: float
    # [compat] min_job_age_s: how long an ended job is still shown by squeue and scontrol
    # (Slurm's MinJobAge)
    min_job_age_s: int = 300


class Health(msgspec.Struct, kw_only=True):
    """What a controller says of itself to anyone (/v1/health), active or standby."""

    role: str  # "active", "standby", or "taking_over" (it holds the lead and is loading the store)
    address: str  # where clients and nodes reach this controller
    active: str | None = None  # where the active controller is, as far as this one knows


class ErrorReply(msgspec.Struct):
    error: str
    kind: str
    active: str | None = None  # kind "standby": the active controller's address, if known


# -- many hosts: join tokens, joining and leaving ------------------------------------------------


class DrainRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`drover node drain`: why (shown by `drover nodes`, as Slurm's Reason)."""

    reason: ShownReason = ""


class TokenRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`drover token create`: how long the token is good for, and for how many joins."""

    ttl_s: float = 3600.0
    uses: int = 1


class TokenInfo(msgspec.Struct, kw_only=True):
    """A join token as `drover token list` shows it (never its secret)."""

    id: str
    created_at: float
    created_by: str
    expires_at: float
    uses_left: int
    revoked_at: float | None = None
    state: str  # "valid", "expired", "used up" or "revoked"


class TokenCreated(msgspec.Struct, kw_only=True):
    token: str  # shown once: the controller keeps only its secret's hash
    info: TokenInfo


class TokenList(msgspec.Struct):
    tokens: list[TokenInfo]


class AllocQueueRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """`drover alloc add`: what to ask an outer scheduler for while work waits (core/allocations.py)."""

    manager: str = "slurm"
    time_limit_s: float = 3600.0
    workers_per_alloc: int = 1
    max_workers: int = 4
    backlog: int = 1
    idle_timeout_s: float = 300.0
    partition: str | None = None
    extra_args: list[str] = []
    name: str = ""


class AllocationInfo(msgspec.Struct, kw_only=True):
    """One allocation asked for: its id in the outer scheduler, and its nodes in Drover."""

    outer_id: str
    workers: int
    state: str  # "queued", "running", "ended" or "failed"
    submitted_at: float
    started_at: float | None = None
    ended_at: float | None = None
    reason: str | None = None
    nodes: list[str] = []


class AllocQueueInfo(msgspec.Struct, kw_only=True):
    """An allocation queue as `drover alloc list` and `info` show it."""

    id: int
    manager: str
    name: str
    state: str  # "active", "paused", "backing off" or "removed"
    time_limit_s: float
    workers_per_alloc: int
    max_workers: int
    backlog: int
    idle_timeout_s: float
    partition: str | None = None
    extra_args: list[str] = []
    created_at: float
    created_by: str
    failures: int = 0
    backoff_until: float | None = None
    last_error: str | None = None
    last_error_at: float | None = None
    allocations: list[AllocationInfo] = []


class AllocQueueList(msgspec.Struct):
    queues: list[AllocQueueInfo]


class CaCertificate(msgspec.Struct, kw_only=True):
    """The cluster's CA certificate: a joining host checks its fingerprint against its token's."""

    certificate: str  # PEM
    fingerprint: str  # SHA-256 of its DER encoding, lowercase hex


class JoinRequest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    token: str
    node: str
    csr: str  # PEM: the node's signing request; its key never leaves the node


class JoinReply(msgspec.Struct, kw_only=True):
    node: str
    certificate: str  # PEM: the node's certificate, naming it
    ca: str  # PEM: the cluster's CA certificate


class LeaveReply(msgspec.Struct, kw_only=True):
    node: str


class ParallelEnvironmentInfo(msgspec.Struct, kw_only=True):
    """A parallel environment of drover.toml ([parallel_environments.NAME], sge_pe(5)), and its
    slots in use now."""

    name: str
    slots: int
    slots_used: int
    user_lists: list[str]
    xuser_lists: list[str]
    start_proc_args: str | None
    stop_proc_args: str | None
    allocation_rule: str
    control_slaves: bool
    job_is_first_task: bool
    accounting_summary: bool = False
    running: int  # tasks of its jobs running now
    pending: int  # jobs waiting for it


class ParallelEnvironmentList(msgspec.Struct):
    parallel_environments: list[ParallelEnvironmentInfo]
class CheckpointInfo(msgspec.Struct, kw_only=True):
    """A checkpoint environment of the cluster's ([checkpoints.NAME]; Grid Engine's checkpoint(5))."""

    name: str
    interface: str  # "application-level" or "userdefined"
    ckpt_command: str  # "none", or the command as configured
    migr_command: str
    restart_command: str
    clean_command: str
    ckpt_dir: str | None
    signal: str | None
    when: str  # checkpoint(5)'s letters
    min_cpu_interval_s: int


class CheckpointList(msgspec.Struct):
    checkpoints: list[CheckpointInfo]


class PeTaskRequest(msgspec.Struct, forbid_unknown_fields=True):
    """Start a task of a running parallel job on one of its hosts (GE's `qrsh -inherit`)."""

    host: str
    argv: list[str]
    task: int = 0  # the job's task (array index) whose attempt the task joins
    cwd: str | None = None  # absolute; None: the job's working directory
    env: dict[str, str] | None = None  # None: the job's environment
    # The owner's MUNGE credential over what the task runs (cluster/signing.py, SignedPeTask),
    # for nodes that run signed jobs only; made by `drover` on a host where munged runs.
    credential: str | None = None


class PeTaskInfo(msgspec.Struct, kw_only=True):
    """A task of a parallel job on one of its hosts."""

    job_id: int
    task: int
    attempt: int
    petask: str  # GE's <petaskid>: "1", "2", ... in the attempt
    host: str
    argv: list[str]
    started_at: float
    ended_at: float | None = None
    exit_code: int | None = None
    signal: int | None = None
    failure: str | None = None
    exit_status: int | None = None  # what a shell would show: exit code, or 128 + signal; 1 for a failure
    usage: Usage | None = None
    # Its usage is in its attempt's (its PE's accounting_summary); else it is accounted on its own.
    in_job_usage: bool = True
