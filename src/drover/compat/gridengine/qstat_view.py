"""qstat's job listing: rows from Drover's jobs, and the table, `-f` and `-xml` forms, each laid
out with the printf formats of Grid Engine's qstat (source/clients/qstat/qstat.c, qstat_xml.c).
Pure: the jobs, nodes and clock reading come in as data."""

from __future__ import annotations

import time
from dataclasses import dataclass
from xml.sax.saxutils import escape

from drover.compat.gridengine.common import fresh_state, queue_name, task_state, when
from drover.compat.gridengine.queues import drover_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import JobInfo, NodeInfo

QUEUE_WIDTH = 30  # qstat's longest_queue_length
XMLNS = "http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qstat/qstat.xsd"
RUNNING = ("r", "t", "s", "S", "sS", "Rr", "Rt")


@dataclass(frozen=True)
class Row:
    job_id: int
    prior: float
    name: str
    owner: str
    state: str
    stamp: float  # start time when running, else submission time
    queue: str  # `queue@node` when running, else ""
    slots: int
    tasks: str  # the array task, or a range of waiting tasks; "" for a job that is not an array
    priority: int
    submitted_at: float
    node: str = ""

    @property
    def is_running(self) -> bool:
        return self.state in RUNNING


def normalized_priority(priority: int) -> float:
    """GE's `prior` column is the job's normalized priority, 0.0 to 1.0; the POSIX priority
    (-1023..1024) stands in for it, 0 as 0.5."""
    return (priority + 1024) / 2048


def rows(job: JobInfo, each_task: bool = False) -> list[Row]:
    """One row per task that has a record (running, suspended, requeued, held in error), and
    one for the tasks that never ran, their indices as a range (`-g d`: one row each)."""
    out: list[Row] = []
    queue = queue_name(job)
    for task in sorted(job.tasks, key=lambda t: t.index):
        state = task_state(task)
        if state is None:
            continue
        attempt = task.attempts[-1] if task.attempts else None
        if state in ("qw", "hqw") and job.pending_reason == "dependency":
            state = "hqw"  # -hold_jid: Grid Engine shows a job waiting for others as held
        running = state in RUNNING and attempt is not None
        stamp = (attempt.started_at or attempt.dispatched_at) if running and attempt else job.submitted_at
        node = attempt.node if running and attempt else ""
        out.append(Row(job.id, normalized_priority(job.priority), job.name, job.owner, state, stamp,
                       f"{queue}@{node}" if node else "", job.cpus, str(task.index) if job.array else "",
                       job.priority, job.submitted_at, node))
    waiting = fresh_state(job)
    if waiting is not None:
        if waiting == "qw" and job.pending_reason == "dependency":
            waiting = "hqw"
        indices = fresh_indices(job)
        labels = [str(i) for i in indices] if each_task and job.array else [task_ranges(indices) if job.array else ""]
        for label in labels:
            out.append(Row(job.id, normalized_priority(job.priority), job.name, job.owner, waiting,
                           job.submitted_at, "", job.cpus, label, job.priority, job.submitted_at))
    return out


def array_indices(compact: str) -> list[int]:
    """Drover's compact index list (`1-100:2`, `1,5-7`) → the indices."""
    indices: list[int] = []
    for part in compact.split("%")[0].split(","):
        span, _, step = part.partition(":")
        first, _, last = span.partition("-")
        indices += range(int(first), int(last or first) + 1, int(step or 1))
    return indices


def fresh_indices(job: JobInfo) -> list[int]:
    if not job.array:
        return [0]
    recorded = {task.index for task in job.tasks}
    return [i for i in array_indices(job.array) if i not in recorded]


def task_ranges(indices: list[int]) -> str:
    """Grid Engine's range list: `1-10:1`, `2-10:2`, `1,3-5:1` (a single index alone)."""
    parts: list[str] = []
    i = 0
    while i < len(indices):
        first = indices[i]
        if i + 1 < len(indices):
            step = indices[i + 1] - first
            j = i + 1
            while j + 1 < len(indices) and indices[j + 1] - indices[j] == step:
                j += 1
            parts.append(f"{first}-{indices[j]}:{step}")
            i = j + 1
        else:
            parts.append(str(first))
            i += 1
    return ",".join(parts)


def ordered(all_rows: list[Row]) -> tuple[list[Row], list[Row]]:
    """Running (in queue instances) first, by job and task; then waiting ones, by priority and
    submission, as qstat lists them."""
    running = sorted((r for r in all_rows if r.is_running), key=lambda r: (r.job_id, _task_key(r.tasks)))
    waiting = sorted((r for r in all_rows if not r.is_running),
                     key=lambda r: (-r.priority, r.submitted_at, r.job_id, _task_key(r.tasks)))
    return running, waiting


def _task_key(tasks: str) -> int:
    head = tasks.split("-")[0].split(",")[0]
    return int(head) if (head.isascii() and head.isdigit()) else 0


def left(text: str, width: int) -> str:
    """printf's `%-W.Ws`: cut to W characters, padded to W."""
    return text[:width].ljust(width)


def header() -> str:
    """The header and its rule, as job_stdout_job() prints them the first time."""
    first = (f"{left('job-ID', 7)} prior   {left('name', 10)} {left('user', 12)} {left('state', 5)} "
             f"submit/start at     {left('queue', QUEUE_WIDTH)} slots ja-task-ID ")
    return first + "\n" + "-" * 93 + "-" * (QUEUE_WIDTH - 10)


def line(row: Row, with_queue: bool = True) -> str:
    """One job line, as job_stdout_job() prints it: `%7d %7.5f %-10.10s %-12.12s %-5.5s DATE
    %-30.30s %5d TASKS`."""
    text = (f"{row.job_id:7d} {row.prior:7.5f} {left(row.name, 10)} {left(row.owner, 12)} {left(row.state, 5)} "
            f"{when(row.stamp)} ")
    if with_queue:
        text += left(row.queue, QUEUE_WIDTH) + " "
    text += f"{row.slots:5d} "
    return text + (row.tasks if row.tasks else "       ")


def queue_line(*columns: str) -> str:
    """A queue instance's line in `qstat -f`: `%-30.30s %-5.5s %-14.14s %-8.8s %-13.13s %s`."""
    name, qtype, slots, load, arch, states = columns
    return (f"{left(name, QUEUE_WIDTH)} {left(qtype, 5)} {left(slots, 14)} {left(load, 8)} {left(arch, 13)} "
            f"{states}")


def table(all_rows: list[Row]) -> str:
    running, waiting = ordered(all_rows)
    if not running and not waiting:
        return ""
    return "\n".join([header(), *(line(r) for r in running + waiting)]) + "\n"


def full(all_rows: list[Row], nodes: list[NodeInfo], queues: list[str], arch: str) -> str:
    """`qstat -f`: each queue instance with its jobs under it, then the waiting jobs."""
    running, waiting = ordered(all_rows)
    out = [queue_line("queuename", "qtype", "resv/used/tot.", "load_avg", "arch", "states")]
    for queue in queues:
        for node in nodes:
            name = f"{queue}@{node.name}"
            here = [r for r in running if r.queue == name]
            used = sum(r.slots for r in here)
            states = {"down": "u", "drained": "d", "draining": "d", "error": "E"}.get(node.state, "")
            if drover_name(queue) in node.queue_errors and "E" not in states:  # the instance alone in error
                states += "E"
            if drover_name(queue) in node.suspended_queues:  # the instance suspended (qmod -sq)
                states += "s"
            out.append("-" * 81)
            out.append(queue_line(name, "BIP", f"0/{used}/{node.cpus} ", "-NA- ", f"{arch} ", states))
            out += [line(r, with_queue=False) for r in here]
    if waiting:
        out += ["", "#" * 76, " - PENDING JOBS - PENDING JOBS - PENDING JOBS - PENDING JOBS - PENDING JOBS",
                "#" * 76]
        out += [line(r, with_queue=False) for r in waiting]
    return "\n".join(out) + "\n"


def _xml_time(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(stamp))


def _xml_row(row: Row, state: str, full_listing: bool) -> list[str]:
    stamp = "JAT_start_time" if row.is_running else "JB_submission_time"
    lines = [f'    <job_list state="{state}">', f"      <JB_job_number>{row.job_id}</JB_job_number>",
             f"      <JAT_prio>{row.prior:.5f}</JAT_prio>", f"      <JB_name>{escape(row.name)}</JB_name>",
             f"      <JB_owner>{escape(row.owner)}</JB_owner>", f"      <state>{row.state}</state>",
             f"      <{stamp}>{_xml_time(row.stamp)}</{stamp}>"]
    if not full_listing:
        lines.append(f"      <queue_name>{escape(row.queue)}</queue_name>")
    lines.append(f"      <slots>{row.slots}</slots>")
    if row.tasks:
        lines.append(f"      <tasks>{row.tasks}</tasks>")
    return [*lines, "    </job_list>"]


def xml(all_rows: list[Row], nodes: list[NodeInfo] | None = None, queues: list[str] | None = None,
        arch: str = "lx-amd64") -> str:
    """`qstat -xml` (and `-f -xml`, with the queue instances): running jobs in queue_info,
    waiting ones in job_info."""
    running, waiting = ordered(all_rows)
    out = ["<?xml version='1.0'?>", f'<job_info  xmlns:xsd="{XMLNS}">', "  <queue_info>"]
    if nodes is not None and queues is not None:
        for queue in queues:
            for node in nodes:
                name = f"{queue}@{node.name}"
                here = [r for r in running if r.queue == name]
                out += ["    <Queue-List>", f"      <name>{escape(name)}</name>", "      <qtype>BIP</qtype>",
                        "      <slots_used>" + str(sum(r.slots for r in here)) + "</slots_used>",
                        "      <slots_resv>0</slots_resv>", f"      <slots_total>{node.cpus}</slots_total>",
                        f"      <arch>{arch}</arch>"]
                out += ["  " + text for r in here for text in _xml_row(r, "running", True)]
                out.append("    </Queue-List>")
    else:
        out += [text for r in running for text in _xml_row(r, "running", False)]
    out += ["  </queue_info>", "  <job_info>"]
    out += [text for r in waiting for text in _xml_row(r, "pending", nodes is not None)]
    out += ["  </job_info>", "</job_info>"]
    return "\n".join(out) + "\n"
