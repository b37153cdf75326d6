"""Slurm as an outer scheduler: sbatch, squeue, scancel, srun (tested against a real Slurm by
tests/integration/cluster/test_alloc_slurm.py)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from drover.cluster.outer.base import Refused, Request, exports, quoted
from drover.core.allocations import AllocationState

# squeue's states (its long form, %T): those before the job runs, and those while it does.
QUEUED_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESV_DEL_HOLD", "SPECIAL_EXIT",
                           "SUSPENDED", "STOPPED", "RESIZING"})
RUNNING_STATES = frozenset({"CONFIGURING", "RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT"})


def slurm_time(seconds: float) -> str:
    """sbatch's --time in [days-]hours:minutes:seconds, rounded down to the second."""
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}" if days else f"{hours}:{minutes:02d}:{secs:02d}"


def parse_slurm_time(text: str) -> float | None:
    """squeue's %L (time left): [days-][hours:]minutes:seconds, or UNLIMITED/INVALID/NOT_SET."""
    match = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)", text.strip())
    if match is None:
        return None
    days, hours, minutes, secs = (int(part) if part else 0 for part in match.groups())
    return float(days * 86400 + hours * 3600 + minutes * 60 + secs)


class Slurm:
    name = "slurm"
    script_on_stdin = False

    def submit(self, request: Request) -> list[str]:
        argv = ["sbatch", "--parsable", f"--job-name={request.name}", f"--nodes={request.workers}",
                "--ntasks-per-node=1", f"--time={slurm_time(request.time_limit_s)}", f"--output={request.output}",
                "--no-requeue"]
        if request.partition:
            argv.append(f"--partition={request.partition}")
        # The user's own arguments come last: they may override ours (sbatch takes the last).
        return [*argv, *request.extra_args, request.script]

    def submitted_id(self, stdout: str) -> str:
        # --parsable: "<job id>" or "<job id>;<cluster>"
        first = stdout.strip().splitlines()[0] if stdout.strip() else ""
        job_id = first.split(";")[0].strip()
        if not job_id.isdigit():
            raise Refused(f"sbatch said no job id: {stdout.strip()[:200]!r}")
        return job_id

    def output_file(self, output: str, name: str, allocation_id: str) -> str:
        return output.replace("%j", allocation_id)

    def status(self, name_prefix: str, user: str, ids: Sequence[str]) -> list[str]:
        # Every job of the user, filtered by name here: squeue's --name matches whole names only.
        # (squeue --jobs of an id it no longer knows fails as a whole: the user's list does not.)
        return ["squeue", "--noheader", f"--user={user}", "--format=%i|%j|%T"]

    def answered(self, code: int, stdout: str, stderr: str) -> bool:
        return code == 0

    def states(self, stdout: str) -> dict[str, AllocationState]:
        found: dict[str, AllocationState] = {}
        for line in stdout.splitlines():
            parts = line.strip().split("|")
            if len(parts) != 3:
                continue
            job_id, _, state = parts
            if state in QUEUED_STATES:
                found[job_id] = AllocationState.QUEUED
            elif state in RUNNING_STATES:
                found[job_id] = AllocationState.RUNNING
        return found

    def names(self, stdout: str) -> dict[str, str]:
        """Each listed job's name, by id."""
        return {parts[0]: parts[1] for line in stdout.splitlines() if len(parts := line.strip().split("|")) == 3}

    def cancel(self, ids: Sequence[str]) -> list[str]:
        return ["scancel", *ids]

    def script(self, worker: Sequence[str], workers: int, environment: Mapping[str, str]) -> str:
        # srun starts one worker on each node of the allocation (--ntasks-per-node=1); with one
        # node the worker runs in the batch step itself. --overlap would let later steps share
        # the CPUs: the worker's jobs are its own processes, not Slurm steps.
        run = quoted(worker) if workers == 1 else \
            f"srun --nodes={workers} --ntasks={workers} --ntasks-per-node=1 --kill-on-bad-exit=0 {quoted(worker)}"
        return ("#!/bin/bash\n"
                "# An allocation of Drover's (`drover alloc`): one Drover node on each node of it.\n"
                f"{exports(environment)}exec {run}\n")

    def allocation_id(self, environ: Mapping[str, str]) -> str | None:
        return environ.get("SLURM_JOB_ID") or environ.get("SLURM_JOBID")

    def node_index(self, environ: Mapping[str, str]) -> int:
        given = environ.get("SLURM_NODEID", "0")
        return int(given) if given.isdigit() else 0

    def time_left(self, allocation_id: str) -> list[str]:
        return ["squeue", "--noheader", f"--jobs={allocation_id}", "--format=%L"]

    def seconds_left(self, stdout: str) -> float | None:
        lines = stdout.strip().splitlines()
        return parse_slurm_time(lines[0]) if lines else None
