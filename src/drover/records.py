"""The shapes of an attempt's records: what the controller orders a node to run, what the node
adds, and how the attempt ended and what it used.

One definition for every reader and writer: the controller builds the order from it, the node
checks the order against it (protocol/node_channel.py decodes into these types), the spool files
are written and read as it, the shepherd reads its config and writes its exit and usage records
as it, and the controller keeps the exit and usage records it is sent as it (core/job.py).
TypedDicts, standard library only, so the shepherd may import it and pays no decoding cost.
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
    # The site's commands below (the queue's prolog, epilog and starter, the PE's procedures, the
    # named environments' scripts, the checkpoint commands) are filled in by the node from its own
    # drover.toml (execd/site_methods.py): an order that carries one is refused. The order names
    # what the job uses, and lists the methods the controller's drover.toml has for them.
    queue_prolog: NotRequired[str | None]  # the queue's methods (the site's)
    queue_epilog: NotRequired[str | None]
    site_methods: NotRequired[dict[str, str]]  # order key ("queue_prolog", "pe_start") → SHA-256 of the command
    environment_names: NotRequired[list[str]]  # the named environments the job asked for, in order
    credential: NotRequired[str | None]  # the owner's signature over what the job runs (cluster/signing.py)
    output_pattern: NotRequired[str]  # what `stdout` and `stderr` were made from, as the owner signed them
    error_pattern: NotRequired[str | None]
    event_log: NotRequired[str | None]  # the job's --event-log: here for the owner's signature only
    # The generic resources the attempt was given: name → device indices on the node
    # ({"gpu": [0, 2]}), for CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS and SGE_HGR_<name>.
    gres: NotRequired[dict[str, list[int]]]
    queue_nice: NotRequired[int]  # added to the job's nice: its queue's `nice` (jobd's)
    job_pids_max: NotRequired[int | None]  # the job's own process limit (--pids-max); the node's caps it
    # [controller] forbid_reschedule and forbid_apperror, for the node's final record and end
    # mail: 99 and 100 mean what they mean to the controller (core/exit_status.ExitSemantics)
    forbid_reschedule: NotRequired[bool]
    forbid_apperror: NotRequired[bool]
    # Its queue's "auto", "on" or "off" for the node's checks of use against reservation
    # (execd/enforcement.py); absent: the node's own [execd] setting.
    enforce_cpu: NotRequired[str]
    enforce_memory: NotRequired[str]
    # jobd's options, for the shepherd at the job's end, as the owner: remove the output files
    # (zapthisjob); move the output to `done_output` (absolute; doneoutput), made of the pattern
    # the owner signed; copy it into the spool for the end-of-job mail (mailoutput).
    zap: NotRequired[bool]
    done_output: NotRequired[str]
    done_output_pattern: NotRequired[str]
    mail_output: NotRequired[bool]
    # Grid Engine's queue_conf starter_method: the job's queue's, which starts the job in its
    # place (shepherd/starter.py); it wins over the node's `starter_method`.
    queue_starter_method: NotRequired[str]
    # The Accelerator's named environments the job asked for, in order, with their scripts as the
    # node's drover.toml has them (shepherd/environments.py).
    environments: NotRequired[list[EnvironmentRecord]]
    # Grid Engine's parallel environment (sge_pe(5)), for a job that asked for one: its name, the
    # slots it was given, and its start and stop procedures (placeholders not yet replaced), each
    # run as the job's owner, or as the node daemon's user when `_as_site` (the "root@" prefix).
    pe: NotRequired[str]
    pe_slots: NotRequired[int]
    pe_start: NotRequired[str]
    pe_start_as_site: NotRequired[bool]
    pe_stop: NotRequired[str]
    pe_stop_as_site: NotRequired[bool]
    # Grid Engine's queue_conf(5) suspend_method, resume_method, terminate_method of the job's
    # queue (method_command.py), and its notify time for a job submitted with --notify. In an
    # order: a signal or NONE an operator set (`drover queue set`); the node's drover.toml else.
    queue_suspend_method: NotRequired[str]
    queue_resume_method: NotRequired[str]
    queue_terminate_method: NotRequired[str]
    notify_s: NotRequired[int]
    # The job's checkpoint environment (Grid Engine's checkpoint(5); core/checkpoints.py): in an
    # order, its name and the job's occasions without commands; the node fills in its own
    # drover.toml's, their placeholders expanded but $job_pid, which the shepherd fills in.
    checkpoint: NotRequired[AttemptCheckpoint]
    # A parallel job's other hosts and the CPUs it holds on each (its slots there), after this
    # node, its master: the pe_hostfile's further lines (GE: "each involved host").
    pe_hosts: NotRequired[list[PeHostRecord]]
    # A task of a running parallel job started on one of its hosts (GE's tight integration,
    # `qrsh -inherit`): its <petaskid>, and the name of its own cgroup ("<attempt>.<petaskid>").
    # Such a task runs no prolog, epilog or PE procedure (docs/parallel-environments.md).
    pe_task: NotRequired[str]
    containment_name: NotRequired[str]


class PeHostRecord(TypedDict):
    """One more host of a parallel job: its name and the CPUs the job holds there."""

    node: str
    cpu_ids: list[int]


class EnvironmentRecord(TypedDict):
    """One named environment of an attempt: [environments.NAME] of drover.toml."""

    name: str
    setup: str | None  # sourced by bash as the owner; the environment it leaves is the job's
    post: str | None  # run as the owner after the job's epilog
    unknown: NotRequired[bool]  # named at submission, not in the node's drover.toml (refused before)


class AttemptCheckpoint(TypedDict):
    """A checkpointing job's environment, as its shepherd uses it (shepherd/checkpoint.py)."""

    name: str
    interface: str  # "application-level" or "userdefined"
    ckpt_command: list[str] | None  # run as the owner; None: the signal instead
    migr_command: list[str] | None
    clean_command: list[str] | None  # after the job ended on its own
    ckpt_dir: str | None
    signal: str | None  # "SIGUSR2"
    when: str  # checkpoint(5)'s letters in effect for the job
    interval_s: int | None  # 'm': checkpoint every this many seconds of run time
    restarted: bool  # an earlier attempt of the task ran: RESTARTED=1, the `checkpointed` record


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
    pids_max: NotRequired[int]  # each job's process limit (its cgroup's pids.max); 0: none
    node_gpus: NotRequired[int]  # the node's GPUs (gpu 0 .. N-1, /dev/nvidia0 ..): those not given are denied
    # VOV 14: who runs the diagnostics scripts, "not as root, but as the owner" of the system:
    # [execd] diagnostics_user, else the service account. None: the shepherd's own user, or,
    # when that is root, nobody (the scripts do not run).
    diagnostics_identity: NotRequired[IdentityRecord | None]
    # VOV 10 (VOV_DEBUG_TASKER): the shepherd waits this long right after recording its pid, for a
    # debugger to attach ([execd] debug_shepherd_s, or DROVER_DEBUG_SHEPHERD in the execd's environment).
    debug_pause_s: NotRequired[float]
    # [execd] starter_method: the node's command that starts every job in its place (Altair
    # Accelerator's vovtasker -E; shepherd/starter.py).
    starter_method: NotRequired[str]
    # [execd] suspend_method, resume_method, terminate_method: where the job's queue sets none.
    node_suspend_method: NotRequired[str | None]
    node_resume_method: NotRequired[str | None]
    node_terminate_method: NotRequired[str | None]


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


class MethodRun(TypedDict):
    """One prolog, epilog or PE step that ran (seeds: GE shepherd's methods, VOV's pre/postcmd)."""

    step: str  # prolog, epilog, pe_start, pe_stop
    level: str  # job, queue or node: whose method it was
    exit_code: int


class ExitStatus(TypedDict):
    """How the attempt ended. Written last."""

    exit_code: int | None  # None when killed by a signal or never started
    signal: int | None
    failure: str | None  # why the job could not be started, if it was not
    timed_out: bool  # killed at its time limit
    terminated: bool  # killed on request (cancel): warning signal, grace, SIGKILL
    out_of_memory: bool
    methods: NotRequired[list[MethodRun]]  # the prolog/epilog/PE steps that ran, in order
    # The job hit its process limit: forks refused at its pids.max (pids.events "max"), and that limit.
    pids_refused: NotRequired[int]
    pids_max: NotRequired[int]
    # What the shepherd saw go wrong that did not change how the job ended, for its owner to read
    # (an output file on a filesystem that was full: the job's writes to it failed).
    notes: NotRequired[list[str]]
    shepherd_lost: NotRequired[bool]  # written by the execd: the shepherd died without recording an end
    # The node could not prepare the attempt (its spool could not be written: the disk is full):
    # the job never started. As after a node's failing prolog, the node goes to ERROR and the
    # job is requeued.
    node_fault: NotRequired[bool]
    # Written by the controller: the node was gone longer than node_timeout_s (or came back not
    # knowing the attempt), so how the job ended is unknown. A report the node sends later is
    # stale: recorded as such, never as the task's result.
    node_lost: NotRequired[bool]


class PeTaskRecord(TypedDict):
    """A task a parallel job started on a host of its allocation (`qrsh -inherit`), kept with its
    attempt in the store: its end and usage once its node reported them."""

    petask: str  # its <petaskid>: "1", "2", ... in the attempt
    host: str
    argv: list[str]
    started_at: float
    ended_at: float | None
    exit: ExitStatus | None
    usage: Usage | None
    # Its usage goes into the attempt's (its PE's accounting_summary was true when it started);
    # else the task has an accounting record of its own.
    summed: bool
    counted: bool  # it was looked at for the attempt's usage (once, committed with the attempt's record)


class StagedFile(TypedDict):
    name: str  # relative to the working directory
    record: str  # its copy's file name under the spool's staged_out.d/
    mode: int
    size: int


class RefusedFile(TypedDict):
    name: str
    reason: str  # why it was not copied: a link, a FIFO, not the owner's to read


class StagedOutRecord(TypedDict):
    """The `staged_out` record: the job's output files the shepherd copied, as their owner, into
    the spool, for the node to send to the controller (cleanup step 2)."""

    files: list[StagedFile]
    skipped: list[str]  # over the size limit: named, not sent
    refused: list[RefusedFile]


class GivenUpStep(TypedDict):
    """A cleanup step that still failed after its bounded tries: the pipeline went on without it."""

    step: str
    tries: int  # the failed tries, the last one included
    error: str  # why the last one failed


class CleanupProgress(TypedDict):
    """How far an attempt's cleanup pipeline got (HTCondor's starter: "everything remembers how
    far it got"): the node's `cleanup` record, and the controller's copy of it."""

    done: list[str]  # the steps done (or given up), in order
    step: str | None  # the step that failed last, while the pipeline is stopped
    tries: int
    error: str | None
    staged_out: NotRequired[list[str]]  # the controller's: the files it keeps for the job
    # The steps given up, each with its tries and its last error: kept after the job ended, so
    # `drover show` still says what the node could not do (a record of an older Drover has none).
    given_up: NotRequired[list[GivenUpStep]]


class FinalRecord(TypedDict):
    """Cleanup step 3's record, and what the site's exit hook reads on its stdin."""

    attempt: str
    config: AttemptConfig | None
    exit_status: ExitStatus
    usage: Usage | None
    outcome: str  # END, FAIL or REQUEUE, as the controller will decide it
    recorded_at: float
