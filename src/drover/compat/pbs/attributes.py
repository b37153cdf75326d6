"""A Drover job as PBS's job attributes (pbs_job_attributes(7B)): what `qstat -f` lists and
`qstat -f -F json` nests. Pure, on the job the client returned."""

from __future__ import annotations

import time
from typing import Any

from drover.compat.pbs.common import (
    exit_status,
    job_state,
    queue_name,
    server_name,
    subjob_state,
    subjobs,
)
from drover.compat.pbs.values import hms

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import AttemptInfo, JobInfo, TaskInfo

# PBS Pro's job substates (pbs_job.h): 10 queued, 20 held, 42 running, 92 finished, 93 failed,
# 91 deleted.
SUBSTATES = {"Q": 10, "W": 30, "H": 20, "R": 42, "S": 43, "E": 50, "B": 42, "F": 92, "X": 92}


def letter(job: JobInfo, now: float) -> str:
    """The job's state letter; W for a job that waits for its -a time."""
    state = job_state(job)
    if state == "Q" and job.begin_at is not None and job.begin_at > now:
        return "W"
    return state


def _attempts(job: JobInfo) -> list[AttemptInfo]:
    """Its attempts that ran or run: not a promised one (it waits, queued, for the attempt it
    follows to end: no exec_host yet)."""
    return [attempt for task in job.tasks for attempt in task.attempts if attempt.after is None]


def cpu_used_s(attempts: list[AttemptInfo]) -> float:
    total = 0.0
    for attempt in attempts:
        if attempt.usage is not None:
            total += attempt.usage.cgroup_cpu_s or (attempt.usage.user_cpu_s + attempt.usage.sys_cpu_s)
    return total


def _path(pattern: str | None, job: JobInfo, host: str) -> str | None:
    if pattern is None:
        return None
    text = pattern.replace("%%", "\0").replace("%j", str(job.id)).replace("%A", str(job.id))
    text = text.replace("%x", job.name).replace("%u", job.owner).replace("%a", "^array_index^")
    return f"{host}:{text.replace(chr(0), '%')}"


def _select(job: JobInfo) -> tuple[int, int]:
    """The job's chunks and the CPUs of each."""
    if job.pe_per_node:
        return max(job.cpus // job.pe_per_node, 1), job.pe_per_node
    return 1, job.cpus


def attributes(job: JobInfo, now: float | None = None) -> dict[str, Any]:
    """The job's attributes, in the order qstat -f prints them; resources and variables nested
    as -F json nests them (`resources_used`, `Resource_List`)."""
    now = time.time() if now is None else now
    host = server_name()
    state = letter(job, now)
    attempts = _attempts(job)
    started = [a.started_at for a in attempts if a.started_at is not None]
    out: dict[str, Any] = {"Job_Name": job.name, "Job_Owner": f"{job.owner}@{host}"}
    if attempts:
        wall = sum(((a.ended_at or now) - a.started_at) for a in attempts if a.started_at is not None)
        rss = max((a.usage.max_rss_kib for a in attempts if a.usage is not None), default=0)
        # A max RSS of 0 is not known (accounting.md, Max RSS): mem and vmem are left out, as PBS
        # leaves out what its MoM did not collect.
        mem, vmem = ({"mem": f"{rss}kb"}, {"vmem": f"{rss}kb"}) if rss else ({}, {})
        out["resources_used"] = {"cpupercent": 0, "cput": hms(cpu_used_s(attempts)), **mem, "ncpus": job.cpus,
                                 **vmem, "walltime": hms(wall)}
    out["job_state"] = state
    out["queue"] = queue_name(job.queue)
    out["server"] = host
    out["Checkpoint"] = "u"
    out["ctime"] = time.ctime(job.submitted_at)
    if job.error is not None:
        out["Error_Path"] = _path(job.error, job, host)
    if attempts:
        last = attempts[-1]
        hosts = [last.node, *last.other_nodes]
        out["exec_host"] = "+".join(f"{name}/0*{job.pe_per_node or job.cpus}" for name in hosts)
        out["exec_vnode"] = "+".join(f"({name}:ncpus={job.pe_per_node or job.cpus})" for name in hosts)
    out["Hold_Types"] = "u" if state == "H" else "n"
    out["Join_Path"] = "oe" if job.error is None else "n"
    out["Keep_Files"] = "n"
    out["Mail_Points"] = "a"
    out["mtime"] = time.ctime(max([job.submitted_at, *started, *(t.state_since for t in job.tasks)]))
    out["Output_Path"] = _path(job.output, job, host)
    out["Priority"] = job.priority
    out["qtime"] = time.ctime(job.submitted_at)
    out["Rerunable"] = "True"
    chunks, ncpus = _select(job)
    resources: dict[str, Any] = {"ncpus": job.cpus, "nodect": chunks, "place": "scatter" if chunks > 1 else "pack"}
    select = f"{chunks}:ncpus={ncpus}"
    if job.memory_mib:
        resources["mem"] = f"{job.memory_mib}mb"
        select += f":mem={max(job.memory_mib // chunks, 1)}mb"
    gpus = sum(int(g.rsplit(":", 1)[-1]) for g in job.gres if g.startswith("gpu") and g.rsplit(":", 1)[-1].isdigit())
    if gpus:
        resources["ngpus"] = gpus
        select += f":ngpus={gpus}"
    resources["select"] = select
    if job.time_limit_s is not None:
        resources["walltime"] = hms(job.time_limit_s)
    out["Resource_List"] = resources
    if started:
        out["stime"] = time.ctime(min(started))
    out["substate"] = SUBSTATES.get(state, 10)
    if job.begin_at is not None:
        out["Execution_Time"] = time.ctime(job.begin_at)
    if job.dependencies:
        kinds: dict[str, list[str]] = {}
        for dependency in job.dependencies:
            ref = f"{dependency.job}[{dependency.task}]" if dependency.task is not None else str(dependency.job)
            kinds.setdefault(dependency.kind, []).append(f"{ref}.{host}")
        out["depend"] = ",".join(f"{kind}:{':'.join(ids)}" for kind, ids in kinds.items())
    if job.array is not None:
        out["array"] = "True"
        out["array_indices_submitted"] = job.array.split("%")[0]
        remaining = [t.index for t in subjobs(job) if subjob_state(t) == "Q"]
        out["array_state_count"] = _state_count(job.tasks, job.task_counts)
        if remaining:
            out["array_indices_remaining"] = ",".join(str(i) for i in remaining)
    comment = _comment(job, state)
    if comment:
        out["comment"] = comment
    out["etime"] = time.ctime(job.submitted_at)
    out["run_count"] = len(attempts)
    if state == "F" and job.array is None and job.tasks:
        status = exit_status(job.tasks[0])
        if status is not None:
            out["Exit_status"] = status
    out["project"] = "_pbs_project_default"
    return out


def _state_count(tasks: list[TaskInfo], counts: dict[str, int]) -> str:
    letters = {"Q": 0, "R": 0, "X": 0, "E": 0, "H": 0, "S": 0}
    for state, count in counts.items():
        subjob = {"pending": "Q", "held": "H", "running": "R", "dispatched": "R", "completing": "E",
                  "suspended": "S"}.get(state, "X")
        letters[subjob] += count
    names = {"Q": "Queued", "R": "Running", "X": "Expired", "E": "Exiting", "H": "Held", "S": "Suspended"}
    return " ".join(f"{names[k]}:{v}" for k, v in letters.items() if k in ("Q", "R", "X") or v)


def _comment(job: JobInfo, state: str) -> str | None:
    """The scheduler's comment, as PBS Pro's words say it."""
    attempts = _attempts(job)
    if state in ("R", "B", "E") and attempts:
        return f"Job run at {time.ctime(attempts[-1].started_at or attempts[-1].dispatched_at)} on " \
               f"({attempts[-1].node}:ncpus={job.cpus})"
    if state == "F":
        if job.state == "cancelled" or not attempts:
            return "Job deleted" if job.state == "cancelled" else None
        ran = f"Job run at {time.ctime(attempts[-1].started_at or attempts[-1].dispatched_at)}"
        return f"{ran} and finished" if job.state == "completed" else f"{ran} and failed"
    if state in ("Q", "H", "W") and job.pending_reason:
        return f"Not Running: {job.pending_explanation or job.pending_reason}"
    return None


def subjob_attributes(job: JobInfo, task: TaskInfo, now: float | None = None) -> dict[str, Any]:
    """A subjob's attributes: its array's, with its own state, times and exit status."""
    import msgspec

    single = msgspec.structs.replace(job, array=None, tasks=[task], state=task.state, task_counts={task.state: 1})
    out = attributes(single, now)
    out["job_state"] = subjob_state(task)
    out["array_id"] = f"{job.id}[].{server_name()}"
    out["array_index"] = task.index
    if out["job_state"] == "X":
        status = exit_status(task)
        if status is not None:
            out["Exit_status"] = status
    return out


def flattened(values: dict[str, Any]) -> list[tuple[str, str]]:
    """qstat -f's lines: `resources_used.cput = 00:00:01`."""
    out = []
    for key, value in values.items():
        if isinstance(value, dict):
            out += [(f"{key}.{inner}", str(item)) for inner, item in value.items()]
        else:
            out.append((key, str(value)))
    return out
