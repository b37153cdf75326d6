"""What a job step inherits from its job, whatever its caller's environment lost.

Inside an allocation, Slurm's srun and slurmstepd give a step's tasks the job's variables
(src/common/env.c setup_env: SLURM_JOB_NAME, SLURM_JOB_PARTITION, SLURM_JOB_USER, the nodes...)
from the job itself. A tool may call srun with most of them removed (Snakemake's Slurm jobstep
executor keeps only SLURM_JOB_ID, SLURM_JOBID, SLURM_ARRAY_*, SLURM_CLUSTER_NAME, SLURM_SUBMIT_DIR
and SLURM_SUBMIT_HOST). Drover's job has its variables from its shepherd, in the environment its
leading process started with: srun finds that process among its own ancestors (the same user's,
so /proc/PID/environ is readable) and takes the job's SLURM_* variables from it."""

from __future__ import annotations

import os
from collections.abc import Mapping

MAX_ANCESTORS = 64  # a step is never deeper than this under its job


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it
            fields = file.read().rsplit(b")", 1)[1].split()
        return int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def _environment(pid: int) -> dict[str, str] | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as file:
            raw = file.read()
    except OSError:
        return None
    out = {}
    for entry in raw.split(b"\0"):
        name, equals, value = entry.partition(b"=")
        if equals:
            out[name.decode(errors="surrogateescape")] = value.decode(errors="surrogateescape")
    return out


def job_variables(job_id: str, start: int | None = None) -> dict[str, str]:
    """The SLURM_* variables the job `job_id` started with: those of the outermost ancestor of
    `start` (default: this process's parent) that is a process of that job (its DROVER_JOB_ID is
    `job_id`); {} if none is found (the step was started from outside the job's process tree)."""
    found: dict[str, str] = {}
    pid: int | None = os.getppid() if start is None else start
    for _ in range(MAX_ANCESTORS):
        if pid is None or pid <= 1:
            break
        environment = _environment(pid)
        if environment is None or environment.get("DROVER_JOB_ID") != job_id:
            if found:
                break  # above the job's leading process: its shepherd
        else:
            found = environment
        pid = _parent(pid)
    return {name: value for name, value in found.items() if name.startswith("SLURM_")}


def step_inherits(environ: Mapping[str, str], job_id: str) -> dict[str, str]:
    """The job's variables the caller's environment lacks: what srun adds to its own before it
    reads its input variables and builds its tasks'."""
    return {name: value for name, value in job_variables(job_id).items() if name not in environ}
