"""Drover's jobs as HTCondor's job ads: one ad per proc (a task of the Drover job), with the
attributes condor_q and condor_history show and constraints read (ClusterId, ProcId, Owner,
JobStatus, Cmd, Args, Iwd, RequestCpus...), and the submit file's custom attributes."""

from __future__ import annotations

import json
import socket
from typing import Any

from drover.compat.htcondor import classad
from drover.compat.htcondor.common import HELD, REMOVED, RUNNING, job_status, memory_kib
from drover.compat.htcondor.submission import CLUSTER, PROCESS, VANILLA

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import JobInfo, TaskInfo


def extras(job: JobInfo) -> dict[str, Any]:
    """What condor_submit kept in the job's comment; {} for a job submitted otherwise."""
    text = job.options.get("comment") or ""
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def tasks(job: JobInfo) -> list[TaskInfo]:
    """Every proc's task: an array's as PBS's front end lists its subjobs (those never
    dispatched yet made up from the counts), a single job's its own (one waiting for its first
    dispatch has no record yet)."""
    from drover.compat.pbs.common import subjobs
    from drover.protocol.api import TaskInfo

    if job.array is None and not job.tasks:
        return [TaskInfo(index=0, state=job.state, state_since=job.submitted_at)]
    return subjobs(job)


def ads(job: JobInfo) -> list[dict[str, Any]]:
    return [ad(job, task) for task in tasks(job)]


def _value(text: str) -> Any:
    try:
        expression = classad.parse(text)
    except classad.ClassAdError:
        return text
    value = expression.evaluate({})
    return expression if value is classad.UNDEFINED or value is classad.ERROR else value


def ad(job: JobInfo, task: TaskInfo) -> dict[str, Any]:
    more = extras(job)
    status = job_status(task.state)
    attempt = task.attempts[-1] if task.attempts else None
    host = socket.gethostname()
    proc = task.index if job.array is not None else 0
    out: dict[str, Any] = {
        "ClusterId": job.id, "ProcId": proc, "Owner": job.owner, "User": f"{job.owner}@{host}",
        "GlobalJobId": f"{host}#{job.id}.{proc}#{int(job.submitted_at)}", "JobStatus": status,
        "JobUniverse": VANILLA, "QDate": int(job.submitted_at), "EnteredCurrentStatus": int(task.state_since),
        "Cmd": more.get("cmd", job.name), "Iwd": more.get("iwd", job.workdir), "JobPrio": job.priority,
        "RequestCpus": job.cpus, "RequestMemory": job.memory_mib, "RequestDisk": more.get("disk", 0),
        "NumJobStarts": sum(1 for a in task.attempts if a.started_at is not None), "MyType": "Job",
        "TargetType": "Machine", "DroverJobId": job.id, "DroverState": task.state,
    }
    args = more.get("args")
    if isinstance(args, list):  # one per proc, from the cluster's first (procs keep the file's numbers)
        at = proc - int(more.get("first", 0))
        args = args[at] if 0 <= at < len(args) else None
    if args:
        out["Args"] = str(args).replace(CLUSTER, str(job.id)).replace(PROCESS, str(proc))
    if more.get("log"):
        out["UserLog"] = str(more["log"]).replace(CLUSTER, str(job.id)).replace(PROCESS, str(proc))
    if more.get("batch"):
        out["JobBatchName"] = more["batch"]
    if more.get("leave"):
        out["LeaveJobInQueue"] = True
    if job.gres:
        out["RequestGpus"] = sum(int(g.rsplit(":", 1)[-1]) for g in job.gres if g.rsplit(":", 1)[-1].isdigit())
    if task.stdout:
        out["Out"] = task.stdout
    if task.stderr:
        out["Err"] = task.stderr
    if status == HELD and more.get("held") and not task.attempts:
        out["HoldReason"], out["HoldReasonCode"], out["HoldReasonSubCode"] = (
            "submitted on hold at user's request", 15, 0)
    elif status == HELD:
        out["HoldReason"], out["HoldReasonCode"], out["HoldReasonSubCode"] = (
            f"via condor_hold (by user {job.owner})", 1, 0)
    if attempt is not None:
        if attempt.started_at is not None:
            out["JobCurrentStartDate"] = int(attempt.started_at)
            out["JobStartDate"] = int(min(a.started_at for a in task.attempts if a.started_at is not None))
        if status == RUNNING:
            out["RemoteHost"] = f"slot1@{attempt.node}"
        if attempt.after is None:  # a promised attempt (Idle) has not been on its node yet
            out["LastRemoteHost"] = f"slot1@{attempt.node}"
        usage = attempt.usage
        if usage is not None:
            out["RemoteUserCpu"], out["RemoteSysCpu"] = usage.user_cpu_s, usage.sys_cpu_s
            memory = memory_kib(usage.max_rss_kib, usage.cgroup_peak_memory_bytes)
            if memory is not None:  # not known: left out, as an ad without them
                out["ResidentSetSize"] = out["ImageSize"] = memory
                out["MemoryUsage"] = (memory + 1023) // 1024
        if attempt.started_at is not None:
            end = attempt.ended_at if attempt.ended_at is not None else None
            out["RemoteWallClockTime"] = float(int((end or task.state_since) - attempt.started_at)) if end else 0.0
        if attempt.ended_at is not None and status != HELD:
            out["CompletionDate"] = int(attempt.ended_at)
            if attempt.signal:
                out["ExitBySignal"], out["ExitSignal"] = True, attempt.signal
            elif attempt.exit_code is not None:
                out["ExitBySignal"], out["ExitCode"] = False, attempt.exit_code
        if status == REMOVED:
            out["RemoveReason"] = f"via condor_rm (by user {job.owner})"
    else:
        out["CompletionDate"] = 0
    for name, text in (more.get("attrs") or {}).items():
        out.setdefault(name, _value(str(text).replace(CLUSTER, str(job.id)).replace(PROCESS, str(proc))))
    return out


def job_id(ad: dict[str, Any]) -> str:
    return f"{ad['ClusterId']}.{ad['ProcId']}"
