"""The running attempts' samples as the API shows them: a job's (`GET /v1/jobs/{id}/samples`)
and every visible attempt's, one row each, for `drover top` (`GET /v1/top`).

Built from the working set and the samples in memory; only attempts that are still their task's
latest and active are shown, so a sample that arrives just after an exit shows nothing.
"""

from __future__ import annotations

from drover.controller.nodes.samples import AttemptSamples, LiveSamples
from drover.controller.state import ControllerState
from drover.core.ids import parse_attempt_name
from drover.core.job import Attempt, Job, Task
from drover.protocol import api
from drover.protocol.node_channel import Sample


def job_samples(state: ControllerState, samples: LiveSamples, job_id: int) -> api.JobSamples:
    attempts = []
    for name, entry in samples.of_job(job_id):
        found = _running(state, name)
        if found is not None:
            _, task, attempt = found
            attempts.append(api.AttemptSamples(
                task=task.index, attempt=attempt.number, node=entry.node, latest=_info(entry.latest),
                peak_bytes=entry.peak_bytes, memory_average_bytes=entry.latest.memory_average_bytes,
                cpu_average=entry.latest.cpu_average, history=[_info(sample) for sample in entry.history]))
    return api.JobSamples(job_id=job_id, attempts=attempts)


def top(state: ControllerState, samples: LiveSamples, owner: str | None, now: float) -> api.TopList:
    """`owner`: only that user's attempts; None: everyone's (an operator's view)."""
    rows = []
    for name, entry in samples:
        found = _running(state, name)
        if found is None or (owner is not None and found[0].owner != owner):
            continue
        rows.append(_row(*found, entry, now))
    rows.sort(key=lambda row: (-row.cpu, row.job_id, row.task))
    return api.TopList(at=now, rows=rows)


def _row(job: Job, task: Task, attempt: Attempt, entry: AttemptSamples, now: float) -> api.TopRow:
    latest = entry.latest
    return api.TopRow(
        job_id=job.id, task=task.index, is_array=job.is_array, attempt=attempt.number, name=job.name, owner=job.owner,
        node=attempt.node, state=task.state.value, cpus=job.resources.cpus, cpu=latest.cpu,
        cpu_average=latest.cpu_average, memory_bytes=latest.memory_bytes, peak_bytes=entry.peak_bytes,
        memory_mib=job.resources.memory_mib, started_at=attempt.started_at,
        runtime_s=max(now - (attempt.started_at or attempt.dispatched_at), 0.0),
        processes=latest.processes, threads=latest.threads, cmd=latest.cmd, sampled_at=latest.at,
    )


def _running(state: ControllerState, name: str) -> tuple[Job, Task, Attempt] | None:
    """The job, task and attempt `name` names, if that attempt is its task's active one."""
    try:
        job_id, index, number = parse_attempt_name(name)
    except ValueError:
        return None
    job = state.jobs.get(job_id)
    task = job.tasks.get(index) if job is not None else None
    if job is None or task is None or task.attempt != number or not task.state.is_active:
        return None
    attempt = state.attempts.get((job_id, index, number))
    return (job, task, attempt) if attempt is not None else None


def _info(sample: Sample) -> api.SampleInfo:
    return api.SampleInfo(
        at=sample.at, memory_bytes=sample.memory_bytes, rss_bytes=sample.rss_bytes, cpu=sample.cpu,
        processes=sample.processes, threads=sample.threads, read_bytes=sample.read_bytes,
        write_bytes=sample.write_bytes, cmd=sample.cmd,
    )
