"""The API's shapes as plain data, for the client's fast paths: `drover submit`, `wait`, `run`
and the actions, and the front ends, which must start in a few tens of milliseconds and so never
import msgspec (about 18 ms) to build a request or read a reply.

Generated from the msgspec models of protocol/api.py by scripts/plain_shapes.py; do not edit.
Regenerate with: .venv/bin/python scripts/plain_shapes.py
tests/unit/api/test_plain_shapes.py fails when this file is not what the script writes, and the
controller validates every request against its model (unknown fields refused).
"""

# No `from __future__ import annotations`: TypedDict reads Required[] only from evaluated annotations.
from typing import Required, TypedDict


class StagedFileRequest(TypedDict, total=False):
    """api.StagedFile: a file staged in with a job."""

    name: Required[str]  # relative path in the job's working directory
    data: Required[str]  # base64 in JSON
    mode: int


class DependencyRequest(TypedDict, total=False):
    """api.DependencyOn, as a submission names it."""

    kind: Required[str]  # after, afterok, afternotok, afterany, singleton
    job: int  # 0 for singleton
    task: int | None  # one array task of `job`, or the whole job
    per_task: bool  # task N waits for task N of `job` (aftercorr, qsub -hold_jid_ad)


class JobRequest(TypedDict, total=False):
    """api.JobSubmission: one job to submit; a key left out takes the model's default."""

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
    script: Required[str]
    name: str
    workdir: Required[str]  # absolute; "" runs the job in a scratch directory of its own on the node
    output: str | None  # pattern with %j %a %x %u; default drover-%j.out (arrays drover-%j_%a.out)
    environment: dict[str, str]
    cpus: int
    memory_mib: int
    array: str | None  # "1-100:2%5"
    hold: bool
    priority: int
    after_ok: list[int]  # run only once all these jobs completed successfully (= afterok dependencies)
    dependencies: list[DependencyRequest]
    dependency_any: bool  # one of `dependencies` met is enough (Slurm's `?`); else all must be
    begin_at: float | None  # a Unix time: the job starts no earlier (sbatch --begin, qsub -a)
    stage_in: list[StagedFileRequest]  # copied into the job's working directory before it starts
    # Grid Engine's -l NAME=VALUE beyond time and memory: the controller reads each as a licence,
    # a generic resource or a node feature, by what the cluster has of that name.
    resource_requests: dict[str, str]
    # Grid Engine's -pe NAME SLOTS: the slots of its `pe`, a number or a range n-m (each slot a
    # CPU of the job's node; controller/handlers/parallel_envs.py).
    pe_slots: str | None
    # qsub -c: occasion letters of s m x n r, or an interval, with its `checkpoint` (core/checkpoints.py).
    checkpoint_occasion: str | None


class AttemptSummary(TypedDict):
    """Of api.AttemptInfo, what the fast paths read."""

    number: int
    node: str
    pty_socket: str | None  # where `drover run --pty` reaches a running interactive job


class TaskSummary(TypedDict):
    """Of api.TaskInfo, what the fast paths read."""

    index: int
    state: str
    exit_status: int | None  # what a shell would show: exit code, or 128 + signal
    attempts: list[AttemptSummary]


class DependencySummary(TypedDict):
    """api.DependencyOn, as a job's summary shows it."""

    kind: str  # after, afterok, afternotok, afterany, singleton
    job: int  # 0 for singleton
    task: int | None  # one array task of `job`, or the whole job
    per_task: bool  # task N waits for task N of `job` (aftercorr, qsub -hold_jid_ad)


class JobSummary(TypedDict):
    """api.JobInfo, what a long poll on a job answers with."""

    id: int
    name: str
    owner: str
    state: str  # the job as a whole (see core.views.job_state)
    queue: str
    submitted_at: float
    ended_at: float | None
    priority: int
    cpus: int
    memory_mib: int
    time_limit_s: int | None
    array: str | None  # the array's indices, compact ("1-100:2"), or None
    max_running: int | None
    task_counts: dict[str, int]  # state → number of tasks
    pending_reason: str | None
    pending_explanation: str | None
    exit_status: int | None  # 0 when every task completed; else the first failure's
    end_reason: str | None  # why the controller ended the job itself (an internal error)
    workdir: str  # "" when the job runs in a scratch directory on its node
    submit_dir: str
    output: str
    error: str | None
    after_ok: list[int]  # its afterok dependencies on whole jobs (older clients read these)
    dependencies: list[DependencySummary]
    dependency_any: bool
    begin_at: float | None
    gres: list[str]  # what each task needs beyond CPUs and memory, as submitted (canonical)
    licenses: dict[str, int]
    constraint: str | None
    exclusive: bool
    tasks: list[TaskSummary]  # filled by GET /v1/jobs/{id}; the listing leaves it empty
    pe: str | None  # its parallel environment; its slots are its CPUs
    pe_per_node: int | None  # its slots on each node, in place of its PE's rule
    notify: bool  # submitted with --notify (qsub -notify)
    checkpoint: str | None  # its checkpoint environment ([checkpoints.NAME]) and occasions: "blcr (sx)"
    # The spec's options marked to be shown (core/job_spec.py) that the job set, by label, as text.
    options: dict[str, str]


class ActionOutcome(TypedDict):
    """api.ActionResult: one reference's outcome of an action (cancel, hold, signal...)."""

    ref: str
    ok: bool
    message: str
    kind: str  # when not ok: the error's kind (not_found, conflict, forbidden...; core/errors.py)


class WaitReply(TypedDict):
    """What a long poll on a job answers (GET /v1/jobs/{job_id}/wait): whether it ended, and the job."""

    ended: bool
    job: JobSummary
