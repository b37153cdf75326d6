"""A job, or an element of an array, as the fields bjobs -o names (LSF 10.1's bjobs -o field
names, case-insensitive, with their aliases), and as its default table shows it. Pure, on the
job the client returned."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from drover.compat.lsf.common import (
    elements,
    exit_code,
    host_name,
    last_attempt,
    lsf_time,
    queue_name,
    task_state,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import JobInfo, TaskInfo


@dataclass(frozen=True)
class Row:
    """One line of bjobs: a job, or one element of an array (`index`)."""

    job: JobInfo
    task: TaskInfo
    index: int | None = None

    @property
    def ident(self) -> str:
        return str(self.job.id) if self.index is None else f"{self.job.id}[{self.index}]"

    @property
    def name(self) -> str:
        return self.job.name if self.index is None else f"{self.job.name}[{self.index}]"

    @property
    def state(self) -> str:
        return task_state(self.task)

    def hosts(self) -> list[tuple[str, int]]:
        """Where it runs (or ran): each host and the slots it holds there, its first host first."""
        attempt = last_attempt(self.task)
        if attempt is None or self.state == "PEND" or self.state == "PSUSP":
            return []
        first = self.job.pe_per_node or self.job.cpus
        return [(attempt.node, first), *((node, len(cpus)) for node, cpus in attempt.other_nodes.items())]


def rows(job: JobInfo) -> list[Row]:
    """The job's lines: one, or one per element of an array."""
    if job.array is None:
        task = job.tasks[0] if job.tasks else _waiting(job)
        return [Row(job, task)]
    return [Row(job, task, task.index) for task in elements(job)]


def _waiting(job: JobInfo) -> TaskInfo:
    from drover.protocol.api import TaskInfo

    return TaskInfo(index=0, state=job.state, state_since=job.submitted_at)


def exec_host(row: Row) -> str:
    """EXEC_HOST: `host`, `4*host`, several joined by `:`."""
    return ":".join(f"{slots}*{node}" if slots > 1 else node for node, slots in row.hosts()) or "-"


def _started(row: Row) -> float | None:
    attempt = last_attempt(row.task)
    return attempt.started_at if attempt is not None else None


def _finished(row: Row) -> float | None:
    if row.state not in ("DONE", "EXIT"):
        return None
    attempt = last_attempt(row.task)
    return attempt.ended_at if attempt is not None and attempt.ended_at else row.task.state_since


def _exit_code(row: Row) -> str:
    code = exit_code(row.task) if row.state == "EXIT" else None
    return "" if code is None else str(code)


def _run_time(row: Row) -> str:
    started = _started(row)
    if started is None:
        return "0 second(s)"
    return f"{int((_finished(row) or time.time()) - started)} second(s)"


def _cpu_used(row: Row) -> str:
    total = 0.0
    for attempt in row.task.attempts:
        if attempt.usage is not None:
            total += attempt.usage.cgroup_cpu_s or (attempt.usage.user_cpu_s + attempt.usage.sys_cpu_s)
    return f"{total:.1f} second(s)"


def _max_mem(row: Row) -> str:
    rss = max((a.usage.max_rss_kib for a in row.task.attempts if a.usage is not None), default=0)
    return f"{rss / 1024:.0f} Mbytes" if rss else ""


def _dependency(row: Row) -> str:
    words = {"afterok": "done", "afternotok": "exit", "afterany": "ended", "after": "started"}
    joined = " || " if row.job.dependency_any else " && "
    return joined.join(f"{words.get(d.kind, d.kind)}({d.job}{f'[{d.task}]' if d.task is not None else ''})"
                       for d in row.job.dependencies)


def _time_left(row: Row) -> str:
    started, limit = _started(row), row.job.time_limit_s
    if started is None or limit is None or row.state != "RUN":
        return ""
    left = max(int(started + limit - time.time()), 0)
    return f"{left // 3600}:{left % 3600 // 60:02d} L"


def _slot_count(job: JobInfo) -> int:
    return job.cpus


def file_of(row: Row, pattern: str | None) -> str:
    """An output pattern as the file it names for this job or element (%j, %a, %x, %u filled in)."""
    if not pattern:
        return ""
    text = pattern.replace("%%", "\0").replace("%j", str(row.job.id)).replace("%A", str(row.job.id))
    text = text.replace("%a", str(row.index or 0)).replace("%x", row.job.name).replace("%u", row.job.owner)
    return text.replace("\0", "%")


def _reason(row: Row) -> str:
    return (row.job.pending_explanation or row.job.pending_reason or "") if row.state == "PEND" else ""


# field → its value of a row. "" is a field with no value (bjobs prints `-`, -json "").
FIELDS: dict[str, Callable[[Row], str]] = {
    "jobid": lambda r: str(r.job.id),
    "jobindex": lambda r: str(r.index or 0),
    "stat": lambda r: r.state,
    "user": lambda r: r.job.owner,
    "user_group": lambda r: "",
    "queue": lambda r: queue_name(r.job.queue),
    "job_name": lambda r: r.name,
    "job_description": lambda r: r.job.options.get("comment", ""),
    "proj_name": lambda r: "default",
    "application": lambda r: "",
    "job_group": lambda r: "",
    "from_host": lambda r: host_name(),
    "exec_host": lambda r: "" if exec_host(r) == "-" else exec_host(r),
    "first_host": lambda r: r.hosts()[0][0] if r.hosts() else "",
    "nexec_host": lambda r: str(len(r.hosts())) if r.hosts() else "",
    "submit_time": lambda r: lsf_time(r.job.submitted_at),
    "start_time": lambda r: lsf_time(_started(r)) if _started(r) else "",
    "finish_time": lambda r: lsf_time(_finished(r)) if _finished(r) else "",
    "time_left": _time_left,
    "pend_reason": _reason,
    "exit_code": _exit_code,
    "exit_reason": lambda r: "",
    "kill_reason": lambda r: "",
    "suspend_reason": lambda r: "",
    "slots": lambda r: str(_slot_count(r.job)),
    "nreq_slot": lambda r: str(_slot_count(r.job)),
    "nalloc_slot": lambda r: str(_slot_count(r.job)) if r.hosts() else "0",
    "cpu_used": _cpu_used,
    "run_time": _run_time,
    "max_mem": _max_mem,
    "mem": _max_mem,
    "memlimit": lambda r: f"{r.job.memory_mib} M" if r.job.memory_mib else "",
    "runtimelimit": lambda r: f"{r.job.time_limit_s / 60:.1f} min" if r.job.time_limit_s else "",
    "command": lambda r: r.job.name,
    "dependency": _dependency,
    "sub_cwd": lambda r: r.job.submit_dir,
    "exec_cwd": lambda r: r.job.workdir,
    "output_file": lambda r: file_of(r, r.job.output),
    "error_file": lambda r: file_of(r, r.job.error),
    "priority": lambda r: str(r.job.priority),
}
ALIASES = {"id": "jobid", "name": "job_name", "state": "stat", "sub_time": "submit_time", "from": "from_host",
           "exec": "exec_host", "proj": "proj_name", "ugroup": "user_group", "app": "application",
           "description": "job_description", "group": "job_group"}
# The width each field's column has unless -o gives one (LSF's defaults), and the table's.
WIDTHS = {"jobid": 7, "stat": 5, "user": 7, "queue": 10, "from_host": 11, "exec_host": 11, "job_name": 10,
          "submit_time": 15, "start_time": 15, "finish_time": 16, "exit_code": 9, "jobindex": 8, "slots": 5}
DEFAULT_COLUMNS = ("jobid", "user", "stat", "queue", "from_host", "exec_host", "job_name", "submit_time")


def field_name(word: str) -> str | None:
    name = word.lower()
    name = ALIASES.get(name, name)
    return name if name in FIELDS else None
