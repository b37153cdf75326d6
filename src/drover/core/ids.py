"""Identifiers: a job is a number, a task is (job, index), an attempt is (job, index, number).

Written forms: job ``12``; task ``12.3`` (``12_3`` and ``12[3]`` are accepted too, the Slurm and
PBS spellings); attempt ``12.3.1``, which is also the attempt's spool directory name.
A job that is not an array has one task with index 0.
"""

from __future__ import annotations

from drover.core.errors import BadRequest


def parse_job_ref(text: str) -> tuple[int, int | None]:
    """``"12"`` → (12, None); ``"12.3"``, ``"12_3"`` or ``"12[3]"`` → (12, 3)."""
    raw = text.strip()
    body = raw[:-1].replace("[", ".") if raw.endswith("]") else raw
    job, sep, index = body.replace("_", ".").partition(".")
    try:
        job_id = int(job)
        task_index = int(index) if sep else None
    except ValueError:
        raise BadRequest(f"not a job id: {text!r} (expected JOB or JOB.TASK, e.g. 12 or 12.3)") from None
    if job_id <= 0 or (task_index is not None and task_index < 0):
        raise BadRequest(f"not a job id: {text!r} (ids are positive numbers)")
    return job_id, task_index


def attempt_name(job_id: int, task_index: int, attempt: int) -> str:
    return f"{job_id}.{task_index}.{attempt}"


def parse_attempt_name(name: str) -> tuple[int, int, int]:
    job, index, attempt = name.split(".")
    return int(job), int(index), int(attempt)


def task_name(job_id: int, task_index: int, is_array: bool) -> str:
    return f"{job_id}.{task_index}" if is_array else str(job_id)
