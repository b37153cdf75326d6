"""What an interactive job of a front end (PBS's qsub -I, LSF's bsub -I) asks of `drover run`:
its name, directory, CPUs, memory, time, queue, devices and environment, as `drover run`'s
options, and --pty when the user has a terminal."""

from __future__ import annotations

import sys

from drover.protocol.plain import JobRequest


def run_arguments(job: JobRequest, environment: dict[str, str]) -> list[str]:
    arguments = ["--name", job["name"], "--workdir", job["workdir"], "--cpus", str(job.get("cpus", 1))]
    if "memory_mib" in job:
        arguments += ["--mem", f"{job['memory_mib']}M"]
    if job.get("time_limit_s"):
        arguments += ["--time", f"{job['time_limit_s']}s"]
    if "queue" in job:
        arguments += ["--queue", job["queue"]]
    for gres in job.get("gres", []):
        arguments += ["--gres", gres]
    for name, text in environment.items():
        arguments += ["--env", f"{name}={text}"]
    if sys.stdin.isatty():
        arguments.append("--pty")
    return arguments
