"""The shapes of an attempt's records: what the controller orders a node to run, what the node
adds, and how the attempt ended and what it used.

One definition for every reader and writer: the controller builds the order from it, the node
checks the order against it (protocol/node_channel.py decodes into these types), the spool files
are written and read as it, the shepherd reads its config and writes its exit record (the usage in
it) as it, and the controller keeps the exit and usage records it is sent as it (core/job.py).
TypedDicts, standard library only, so the shepherd may import it and pays no decoding cost.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class AttemptIdentity(TypedDict):
    """Which attempt of which job this is, and its files (controller/handlers/dispatch.py,
    `identity_part`): the job's own fields (not its spec's) and what the controller made of them."""

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
    priority: int
    # Where it runs: the spec's workdir, or a parallel task's own; "" until the node gives the job
    # a scratch directory (then the node's config says where).
    workdir: str
    environment: dict[str, str]  # the job's environment, as submitted (its payload's)
    # Its output files, made by the controller of the spec's patterns (`output`, `error`,
    # `done_output`) for this task on this node: absolute (relative to the scratch directory
    # while workdir is "").
    stdout: str
    stderr: str | None  # None joins stderr into stdout
    done_output: NotRequired[str]  # jobd's doneoutput: the output moved here when the job is done
    # A task of a running parallel job started on one of its hosts (GE's tight integration,
    # `qrsh -inherit`): its <petaskid>, and the name of its own cgroup ("<attempt>.<petaskid>").
    # Such a task runs no prolog, epilog or PE procedure (docs/parallel-environments.md).
    pe_task: NotRequired[str]
    containment_name: NotRequired[str]


class Placement(TypedDict):
    """What the attempt was given (`placement_part`): its CPUs, memory and devices here, and a
    parallel job's other hosts (its parallel environment and slots: the spec's `pe`, `pe_slots`)."""

    cpus: int
    cpu_ids: list[int]
    memory_mib: int  # a parallel job's share on this node
    # The generic resources the attempt was given: name → device indices on the node
    # ({"gpu": [0, 2]}), for CUDA_VISIBLE_DEVICES, SLURM_JOB_GPUS and SGE_HGR_<name>.
    gres: NotRequired[dict[str, list[int]]]
    # A parallel job's other hosts and the CPUs it holds on each (its slots there), after this
    # node, its master: the pe_hostfile's further lines (GE: "each involved host").
    pe_hosts: NotRequired[list[PeHostRecord]]


class SiteSettings(TypedDict):
    """The site's settings for the attempt (`site_part`): the cluster's and its queue's, as the
    controller has them, and the site's commands the node fills in from its own drover.toml."""

    kill_grace_s: float  # between the warning signal and SIGKILL
    queue_nice: NotRequired[int]  # added to the job's nice: its queue's `nice` (jobd's)
    # [controller] forbid_reschedule and forbid_apperror, for the node's final record and end
    # mail: 99 and 100 mean what they mean to the controller (core/exit_status.ExitSemantics)
    forbid_reschedule: NotRequired[bool]
    forbid_apperror: NotRequired[bool]
    # Its queue's "auto", "on" or "off" for the node's checks of use against reservation
    # (execd/enforcement.py); absent: the node's own [execd] setting.
    enforce_cpu: NotRequired[str]
    enforce_memory: NotRequired[str]
    # The site's commands below (the queue's prolog, epilog and starter, the PE's procedures, the
    # named environments' scripts, the checkpoint commands) are filled in by the node from its own
    # drover.toml (execd/site_methods.py): an order that carries one is refused. The order names
    # what the job uses (its spec does), and lists the methods the controller's drover.toml has.
    site_methods: NotRequired[dict[str, str]]  # order key ("queue_prolog", "pe_start") → SHA-256 of the command
    queue_prolog: NotRequired[str | None]  # the queue's methods (the site's)
    queue_epilog: NotRequired[str | None]
    # Grid Engine's queue_conf starter_method: the job's queue's, which starts the job in its
    # place (shepherd/starter.py); it wins over the node's `starter_method`.
    queue_starter_method: NotRequired[str]
    # The Accelerator's named environments the job asked for, in order, with their scripts as the
    # node's drover.toml has them (shepherd/environments.py).
    environments: NotRequired[list[EnvironmentRecord]]
    # The parallel environment's start and stop procedures (placeholders not yet replaced), each
    # run as the job's owner, or as the node daemon's user when `_as_site` (the "root@" prefix).
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


class AttemptOrder(AttemptIdentity, Placement, SiteSettings):
    """What the controller orders a node to run (the `config` of a StartAttempt message, checked
    against this type when the node decodes it): the attempt's identity, its placement, the
    site's settings, and the job's spec, whole."""

    job: JobRecord  # what the user asked of the job, every field: read as config["job"]["NAME"]


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
    # The peak resident set of the job's largest process, where it is the job's own; 0 where it is
    # not known: every process stayed at or under max_rss_inherited_kib (shepherd/rss_mark.py).
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
    max_rss_inherited_kib: NotRequired[int]  # the mark the job's first process started from, where read


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
    # The node could not prepare the attempt (its spool could not be written: the disk is full;
    # its CPUs are not all among those the node offers): the job never started. As after a
    # node's failing prolog, the node goes to ERROR and the job is requeued.
    node_fault: NotRequired[bool]
    # Written by the controller: the node was gone longer than node_timeout_s (or came back not
    # knowing the attempt), so how the job ended is unknown. A report the node sends later is
    # stale: recorded as such, never as the task's result.
    node_lost: NotRequired[bool]
    # Written by the execd of a node that left its cluster for good (its outer scheduler's
    # allocation ended: `drover alloc worker`): it ended the attempt as it left, and `failure`
    # says so. Decided as a node's loss is: requeued if the job may run again, else NODE_FAIL.
    node_left: NotRequired[bool]


class EndRecord(ExitStatus):
    """The attempt's `exit_status` record as the shepherd writes it: how the attempt ended and,
    in the same atomic write, what the job used (none when the job never ran, or when the node
    wrote the record for a shepherd that was lost). The node reports the two apart, as
    ExitStatus and Usage (execd/attempt_records.py), so the controller never sees the usage in
    an exit status. A shepherd of an earlier Drover wrote the usage in a `usage` record of its
    own, just before this one: the node still reads it where this record holds none."""

    usage: NotRequired[Usage]


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
    # The cleanup's progress with the record step done, in the spool's copy: written with the
    # record, in one durable write (execd/attempt_records.cleanup_progress reads it back).
    cleanup: NotRequired[CleanupProgress]


# Generated from core/job_spec.py's JobSpec by scripts/job_record.py; do not edit. Regenerate: .venv/bin/python scripts/job_record.py
class JobRecord(TypedDict):
    """The job's spec (core/job_spec.py, JobSpec) as the order carries it: its canonical
    encoding, every field, as the store holds it."""

    submit_dir: str  # absolute; where the user submitted from (stored: the working directory if not given)
    error: str | None  # a pattern (core/patterns.py); None joins stderr into the output file
    open_mode: str  # or "append"
    time_limit_s: int | None  # stored: the queue's default time when the user gave none
    kill_on_invalid_dep: bool  # a dependency that can never be met cancels the job; else it waits
    mail_user: str | None
    mail_type: list[str]  # BEGIN, END, FAIL, REQUEUE, ARRAY_TASKS
    keep_spool: bool  # keep the attempt's spool directory on the node after cleanup
    event_log: str | None  # an absolute path: every event of the job appended as JSON lines, as the owner
    # jobd's zapthisjob, doneoutput and mailoutput: remove the job's output files when it ends;
    # put its output (stdout and stderr) in this file (a pattern) when it is done; mail it.
    zap: bool
    done_output: str | None
    mail_output: bool
    stage_out: list[str]  # glob patterns in the working directory, copied back after it exits
    prolog: str | None  # the job's own prolog (Accelerator's precmd): fails the job if it fails
    epilog: str | None  # the job's own epilog (postcmd)
    # Accelerator's postcmd (firing sequence step 22): the exit status of the job's own epilog is
    # the job's; False keeps the job's own (`drover submit --no-epilog-sets-exit`).
    epilog_sets_exit: bool
    warn_signal: str | None  # Slurm's --signal: send this signal (e.g. "SIGUSR1")...
    warn_before_s: int  # ...this long before the time limit
    checkpoint_signal: str | None  # what `drover checkpoint` sends the job (e.g. "SIGUSR2")
    rerunnable: bool  # requeued as a new attempt when its shepherd dies (--no-requeue: failed)
    pty: bool  # run under a pseudo-terminal, relayed to `drover run --pty`
    queue: str  # a queue of the cluster's ([queues.NAME] in drover.toml), with its methods
    gres: list[str]  # generic resources each task needs on its node: "gpu:2", "gpu:a100:1" (core/gres.py)
    licenses: dict[str, int]  # cluster-wide counters each task holds while it runs ([licenses])
    constraint: str | None  # node features it needs: "avx512&bigmem", "a|b" (core/constraints.py)
    exclusive: bool  # each task has its node to itself (all its CPUs), as jobd's soleaccess
    # The owner's MUNGE credential over what the job runs (cluster/signing.py), made by their
    # `drover` where munged runs; nodes that require signed jobs check it before running anything.
    credential: str | None
    # The Accelerator's named environments ([environments.NAME] of drover.toml), switched to in
    # this order before the job's prolog (`drover submit --environment A+B`).
    environments: list[str]
    # Grid Engine's -pe NAME: a parallel environment of the cluster's (controller/handlers/parallel_envs.py).
    pe: str | None
    # Its own slots on each node, in place of its PE's allocation rule (the integer rule N: N slots
    # on each node it gets); Slurm's -N with --ntasks-per-node × --cpus-per-task.
    pe_per_node: int | None
    # The job's own process limit (its cgroup's pids.max), at most its node's [execd] pids_max.
    pids_max: int | None
    # Grid Engine's qsub -notify: SIGUSR1 before a suspend, SIGUSR2 before a stop, the queue's
    # notify_s ahead (shepherd/notice.py).
    notify: bool
    # A checkpoint environment of the cluster's ([checkpoints.NAME]; qsub -ckpt; core/checkpoints.py).
    checkpoint: str | None
    # The user's own note about the job (sbatch --comment), kept with it and given back.
    comment: str | None
    workdir: str  # absolute; "" runs the job in a scratch directory on its node
    # A pattern (core/patterns.py); when submitted: the user's, or the default for an array or not.
    output: str
    pe_slots: int | None  # the slots each task holds of its `pe` (set with it), fixed when submitted
    # The checkpoint occasions and period the job asked for (qsub -c), overriding its environment's.
    checkpoint_when: str | None
    checkpoint_interval_s: int | None


# A spec's fields at their defaults: what an order of an older layout did not say.
JOB_DEFAULTS: JobRecord = {
    "submit_dir": "",
    "error": None,
    "open_mode": "truncate",
    "time_limit_s": None,
    "kill_on_invalid_dep": True,
    "mail_user": None,
    "mail_type": [],
    "keep_spool": False,
    "event_log": None,
    "zap": False,
    "done_output": None,
    "mail_output": False,
    "stage_out": [],
    "prolog": None,
    "epilog": None,
    "epilog_sets_exit": True,
    "warn_signal": None,
    "warn_before_s": 60,
    "checkpoint_signal": None,
    "rerunnable": True,
    "pty": False,
    "queue": "default",
    "gres": [],
    "licenses": {},
    "constraint": None,
    "exclusive": False,
    "credential": None,
    "environments": [],
    "pe": None,
    "pe_per_node": None,
    "pids_max": None,
    "notify": False,
    "checkpoint": None,
    "comment": None,
    "workdir": "",
    "output": "drover-%j.out",
    "pe_slots": None,
    "checkpoint_when": None,
    "checkpoint_interval_s": None,
}

# What the owner signs of the spec (cluster/signing.py): these fields always; those after them
# only when set (signed since a later release, so that older credentials still match).
SIGNED: tuple[str, ...] = ("error", "stage_out", "prolog", "epilog", "workdir", "output")
SIGNED_WHEN_SET: tuple[str, ...] = ("event_log", "done_output")
# The environment variables a job finds its spec's fields in, when set (shepherd/environment.py).
JOB_VARIABLES: dict[str, str] = {"comment": "DROVER_COMMENT"}
# End of the generated part.


# The keys of a `config` record written before the order carried the job's spec whole, each
# with the spec's field it was (the other keys of that record were the attempt's, as now).
_EARLIER_KEYS = {"submit_dir": "submit_dir", "open_mode": "open_mode", "time_limit_s": "time_limit_s",
                 "mail_user": "mail_user", "mail_type": "mail_type", "keep_spool": "keep_spool",
                 "job_pids_max": "pids_max", "stage_out": "stage_out", "job_prolog": "prolog",
                 "job_epilog": "epilog", "credential": "credential", "output_pattern": "output",
                 "error_pattern": "error", "event_log": "event_log", "epilog_sets_exit": "epilog_sets_exit",
                 "warn_signal": "warn_signal", "warn_before_s": "warn_before_s",
                 "checkpoint_signal": "checkpoint_signal", "rerunnable": "rerunnable", "pty": "pty",
                 "queue": "queue", "environment_names": "environments", "zap": "zap",
                 "done_output_pattern": "done_output", "mail_output": "mail_output"}


def config_in_current_layout(raw: dict[str, Any]) -> dict[str, Any]:
    """A `config` record as this Drover writes it. One written before the order carried the
    job's spec (an execd restarted over an older spool re-attaches its live attempts) had some
    of the spec's fields flat, under the names above: they are gathered into its `job`, the
    fields it did not have at their defaults."""
    if "job" in raw:
        return raw
    job: dict[str, Any] = dict(JOB_DEFAULTS)
    job.update({field: raw[key] for key, field in _EARLIER_KEYS.items() if raw.get(key) is not None})
    job["workdir"] = "" if raw.get("scratch") else raw.get("workdir", "")
    return {**raw, "job": job}
