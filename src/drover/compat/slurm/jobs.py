"""Drover's jobs as Slurm's commands see them: one `SlurmJob` for each line squeue, sacct and
scontrol print. Pure: built from the API's JobInfo (with its tasks) and the clock.

Drover runs an array as one job with many tasks; Slurm gives each task a line `JOB_INDEX` and
shows the tasks that never started as one line `JOB_[INDICES]` (with `%N` for a limit).
"""

from __future__ import annotations

import grp
import pwd
from dataclasses import dataclass
from functools import lru_cache

from drover.core.arrays import TaskIndices
from drover.core.units import parse_array
from drover.protocol.api import AttemptInfo, JobInfo, TaskInfo, Usage
from drover.slurm_layout import compress_hosts

# Drover's task states → Slurm's long names. A dispatched task (its shepherd is starting it) is
# RUNNING: Slurm's CONFIGURING is the time nodes take to boot, which Drover's nodes do not.
LONG_STATES = {
    "pending": "PENDING", "held": "PENDING", "dispatched": "RUNNING", "running": "RUNNING",
    "suspended": "SUSPENDED", "completing": "COMPLETING", "completed": "COMPLETED", "failed": "FAILED",
    "cancelled": "CANCELLED", "timeout": "TIMEOUT", "out_of_memory": "OUT_OF_MEMORY", "node_fail": "NODE_FAIL",
}
# Slurm's job_state_string_compact, for every state Slurm has (squeue -t takes them all).
COMPACT = {
    "PENDING": "PD", "RUNNING": "R", "SUSPENDED": "S", "COMPLETING": "CG", "COMPLETED": "CD",
    "CONFIGURING": "CF", "CANCELLED": "CA", "FAILED": "F", "TIMEOUT": "TO", "PREEMPTED": "PR",
    "NODE_FAIL": "NF", "BOOT_FAIL": "BF", "DEADLINE": "DL", "OUT_OF_MEMORY": "OOM", "REQUEUED": "RQ",
    "REQUEUE_FED": "RF", "REQUEUE_HOLD": "RH", "RESIZING": "RS", "REVOKED": "RV", "SIGNALING": "SI",
    "SPECIAL_EXIT": "SE", "STAGE_OUT": "SO", "STOPPED": "ST", "RESV_DEL_HOLD": "RD", "EXPEDITING": "EX",
}
FINAL = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"})
ACTIVE = frozenset({"PENDING", "RUNNING", "SUSPENDED", "COMPLETING"})  # what squeue lists by default
# The scheduler's reasons → Slurm's job_state_reason_string.
PENDING_REASONS = {
    "resources": "Resources", "priority": "Priority", "dependency": "Dependency", "begin_time": "BeginTime",
    "dependency_never_satisfied": "DependencyNeverSatisfied", "array_limit": "JobArrayTaskLimit",
    "no_nodes": "ReqNodeNotAvail", "too_big": "BadConstraints",
    "reserved": "Resources",  # Slurm shows the job backfill reserves for as waiting for resources
    # No node that is up has the features or generic resources it asks for (a job held at
    # submission to wait for such nodes, then released), or none of its queue is up.
    "no_node_matches": "BadConstraints",
    "licenses": "Licenses", "pe_slots": "Resources", "queue_stopped": "PartitionDown",
    "queue_window": "PartitionInactive", "queue_limit": "QOSGrpJobsLimit", "user_limit": "QOSMaxJobsPerUserLimit",
    # Drover's own: promised the room of a running job, its node starts it when that one ends
    # (Slurm has no such reason; a job Slurm has not started shows PD with a reason all the same).
    "promised": "Promised",
}
END_REASONS = {"FAILED": "NonZeroExitCode", "TIMEOUT": "TimeLimit", "OUT_OF_MEMORY": "OutOfMemory",
               "NODE_FAIL": "NodeDown"}


@dataclass
class SlurmJob:
    """One line: a whole job, one array task, or an array's tasks that have not started."""

    info: JobInfo
    index: int | None  # the array task's index; None for a job that is not an array, or a group
    pending_indices: str | None  # "1-5,7": the array tasks this one line stands for
    state: str  # Slurm's long name
    drover_state: str
    attempt: AttemptInfo | None = None
    attempts: int = 0
    stdout: str | None = None
    stderr: str | None = None
    exit_status: int | None = None
    held: bool = False
    now: float = 0.0  # the time "now" is for the running ones' elapsed times

    # -- identity ------------------------------------------------------------------------------

    @property
    def job_id(self) -> int:
        return self.info.id

    @property
    def is_array(self) -> bool:
        return self.info.array is not None

    @property
    def job_id_text(self) -> str:
        """squeue's %i and sacct's JobID: `12`, `12_3`, or `12_[4-9%2]`."""
        if self.pending_indices is not None:
            limit = f"%{self.info.max_running}" if self.info.max_running else ""
            return f"{self.job_id}_[{self.pending_indices}{limit}]"
        if self.index is not None:
            return f"{self.job_id}_{self.index}"
        return str(self.job_id)

    @property
    def array_task_text(self) -> str:
        if self.pending_indices is not None:
            limit = f"%{self.info.max_running}" if self.info.max_running else ""
            return self.pending_indices + limit
        return str(self.index) if self.index is not None else "N/A"

    @property
    def ref(self) -> str:
        """The reference Drover's API takes: `12` or `12.3`."""
        return f"{self.job_id}.{self.index}" if self.index is not None else str(self.job_id)

    # -- facts ---------------------------------------------------------------------------------

    @property
    def compact_state(self) -> str:
        return COMPACT.get(self.state, self.state[:2])

    @property
    def reason(self) -> str:
        if self.held:
            return "JobHeldUser"
        if self.state == "PENDING":
            if self.attempt is not None and self.attempt.after is not None:
                return "Promised"  # its node starts it the moment the attempt it follows ends
            return PENDING_REASONS.get(self.info.pending_reason or "", "None")
        if self.state == "FAILED" and self.attempt is not None and self.attempt.signal:
            return "RaisedSignal"
        return END_REASONS.get(self.state, "None")

    @property
    def node(self) -> str:
        return self.attempt.node if self.attempt is not None and self.state != "PENDING" else ""

    @property
    def nodes(self) -> list[str]:
        """The nodes it runs on, its master (the batch host) first; none while it waits."""
        return [self.node, *self.attempt.other_nodes] if self.attempt is not None and self.node else []

    @property
    def nodelist(self) -> str:
        return compress_hosts(self.nodes)

    @property
    def node_count(self) -> int:
        """Its nodes; while it waits, those it asked for (its slots over its slots on each node)."""
        if self.nodes:
            return len(self.nodes)
        return self.info.cpus // self.info.pe_per_node if self.info.pe_per_node else 1

    @property
    def start(self) -> float | None:
        return self.attempt.started_at if self.attempt is not None else None

    @property
    def end(self) -> float | None:
        if self.attempt is not None and self.attempt.ended_at:
            return self.attempt.ended_at
        return self.info.ended_at if self.state in FINAL and self.index is None else None

    @property
    def elapsed(self) -> float:
        """Seconds the job has run: until now while it runs, until its end once ended."""
        if self.start is None or self.state == "PENDING":
            return 0.0
        return max((self.end or self.now) - self.start, 0.0)

    @property
    def exit_code(self) -> int:
        if self.attempt is not None and self.attempt.exit_code is not None:
            return self.attempt.exit_code
        return 0

    @property
    def signal(self) -> int:
        return self.attempt.signal or 0 if self.attempt is not None else 0

    @property
    def usage(self) -> Usage | None:
        return self.attempt.usage if self.attempt is not None else None

    @property
    def user(self) -> str:
        return self.info.owner

    @property
    def uid(self) -> int | None:
        return _uid(self.info.owner)

    @property
    def gid(self) -> int | None:
        return _gid(self.info.owner)

    @property
    def group(self) -> str:
        gid = self.gid
        return _group_name(gid) if gid is not None else ""

    @property
    def workdir(self) -> str:
        return self.info.workdir or self.info.submit_dir

    @property
    def dependency(self) -> str:
        """Slurm's Dependency: while the job waits for them, each marked unfulfilled or failed."""
        if self.state != "PENDING" or self.info.pending_reason not in ("dependency", "dependency_never_satisfied"):
            return ""
        mark = "(failed)" if self.info.pending_reason == "dependency_never_satisfied" else "(unfulfilled)"
        return ("?" if self.info.dependency_any else ",").join(
            f"{_slurm_dependency(d.kind, d.job, d.task, d.per_task)}{mark}" for d in self.info.dependencies)


def _slurm_dependency(kind: str, job: int, task: int | None, per_task: bool) -> str:
    if kind == "singleton":
        return "singleton"
    return f"{'aftercorr' if per_task else kind}:{job}{'' if task is None else f'_{task}'}"


def slurm_jobs(info: JobInfo, now: float, split_pending: bool = False) -> list[SlurmJob]:
    """Every line of one job, in index order: each task that has a record, then the array's
    tasks that have none as one line (or one line each, with `split_pending`, squeue -r)."""
    out: list[SlurmJob] = []
    recorded = {task.index for task in info.tasks}
    for task in info.tasks:
        out.append(_task_line(info, task, now))
    if info.array is None:
        if not out:  # a listing without its tasks: the job as a whole
            out.append(SlurmJob(info, None, None, LONG_STATES.get(info.state, "PENDING"), info.state,
                                held=info.state == "held", exit_status=info.exit_status, now=now))
        return out
    fresh_state = _fresh_state(info)
    if fresh_state is None:
        return out
    ranges, _limit = parse_array(info.array, max_tasks=1 << 31)
    fresh = [index for index in TaskIndices(ranges) if index not in recorded]
    if not fresh:
        return out
    long = LONG_STATES.get(fresh_state, "PENDING")
    held = fresh_state == "held"
    if split_pending or long != "PENDING":
        out += [SlurmJob(info, index, None, long, fresh_state, held=held, now=now) for index in fresh]
    else:
        out.append(SlurmJob(info, None, compress(fresh), long, fresh_state, held=held, now=now))
    return out


def _task_line(info: JobInfo, task: TaskInfo, now: float) -> SlurmJob:
    attempt = task.attempts[-1] if task.attempts else None
    return SlurmJob(
        info, task.index if info.array is not None else None, None, LONG_STATES.get(task.state, "PENDING"),
        task.state, attempt=attempt, attempts=len(task.attempts), stdout=task.stdout, stderr=task.stderr,
        exit_status=task.exit_status, held=task.state == "held", now=now,
    )


def _fresh_state(info: JobInfo) -> str | None:
    """The state of the tasks without a record: what task_counts holds beyond the records."""
    left = dict(info.task_counts)
    for task in info.tasks:
        left[task.state] = left.get(task.state, 0) - 1
    return next((state for state, count in left.items() if count > 0), None)


def compress(indices: list[int]) -> str:
    """Ascending indices in Slurm's compact form: `1-3,5,7-9`."""
    parts: list[str] = []
    start = previous = None
    for index in indices:
        if previous is not None and index == previous + 1:
            previous = index
            continue
        if start is not None:
            parts.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = index
    if start is not None:
        parts.append(str(start) if start == previous else f"{start}-{previous}")
    return ",".join(parts)


@lru_cache(maxsize=256)
def _uid(user: str) -> int | None:
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


@lru_cache(maxsize=256)
def _gid(user: str) -> int | None:
    try:
        return pwd.getpwnam(user).pw_gid
    except KeyError:
        return None


@lru_cache(maxsize=256)
def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
