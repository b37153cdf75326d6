"""PBS (PBS Pro, OpenPBS) as an outer scheduler: qsub, qstat -x -f -F json, qdel, pbsdsh
(tested against Drover's own PBS front end by tests/integration/cluster/test_alloc_pbs_lsf.py).

An allocation is one job of N chunks of one CPU, one chunk a host (`-l select=N:ncpus=1 -l
place=scatter`). Its id is the job id's number (`123` of `123.server`): qstat and qdel take it,
and node names stay plain (pbs-123-0)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from drover.cluster.outer.base import NODE_INDEX, Refused, Request, exports, given_index, quoted
from drover.core.allocations import AllocationState

# job_state's letters (qstat(1B)): before the job runs, while it does, and once it is over.
QUEUED_STATES = frozenset("QHWTMSU")  # queued, held, waiting, in transit, moved; suspended
RUNNING_STATES = frozenset("RBE")  # running, an array begun, exiting
FINISHED_STATES = frozenset("FX")  # finished (qstat -x), a finished subjob
UNKNOWN_JOB = re.compile(r"qstat: Unknown Job Id \S+|qstat: \S+ Job has finished, use -x or -H")


def walltime(seconds: float) -> str:
    """-l walltime's HH:MM:SS (hours past 24 as they are), rounded down to the second."""
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def parse_walltime(text: object) -> float | None:
    """A walltime as qstat shows it: [[HH:]MM:]SS, or seconds."""
    if isinstance(text, int | float):
        return float(text)
    match = re.fullmatch(r"(?:(?:(\d+):)?(\d+):)?(\d+)", str(text).strip())
    if match is None:
        return None
    hours, minutes, secs = (int(part) if part else 0 for part in match.groups())
    return float(hours * 3600 + minutes * 60 + secs)


def sequence(job_id: str) -> str:
    """`123` of `123.server` (the number qstat and qdel take for a job of the default server)."""
    return job_id.strip().split(".", 1)[0]


def _jobs(stdout: str) -> dict[str, dict[str, Any]]:
    """qstat -f -F json's jobs by id; none if it printed no document (no job at all)."""
    try:
        document = json.loads(stdout) if stdout.strip() else {}
    except ValueError:
        return {}
    jobs = document.get("Jobs") if isinstance(document, dict) else None
    return {key: value for key, value in jobs.items() if isinstance(value, dict)} if isinstance(jobs, dict) else {}


class Pbs:
    name = "pbs"
    script_on_stdin = False

    def submit(self, request: Request) -> list[str]:
        argv = ["qsub", "-N", request.name, "-l", f"select={request.workers}:ncpus=1",
                "-l", f"walltime={walltime(request.time_limit_s)}", "-j", "oe",
                # A directory: PBS names the file NAME.oSEQ there (it has no %j).
                "-o", os.path.dirname(request.output) + "/", "-r", "n"]
        if request.workers > 1:
            argv += ["-l", "place=scatter"]  # one chunk a host: each worker is a node of its own
        if request.environment:
            # The names alone: qsub takes their values from its own environment, so the token
            # is in no command line; every task of the job (pbsdsh's too) gets them.
            argv += ["-v", ",".join(sorted(request.environment))]
        if request.partition:
            argv += ["-q", request.partition]
        # The user's own arguments come last: they may override ours (qsub takes the last).
        return [*argv, *request.extra_args, request.script]

    def submitted_id(self, stdout: str) -> str:
        # qsub prints the job's id: 123.server (an array's 123[].server).
        first = stdout.strip().splitlines()[0].strip() if stdout.strip() else ""
        if not re.fullmatch(r"\d+(\.[A-Za-z0-9_.-]+)?", first):
            raise Refused(f"qsub said no job id: {stdout.strip()[:200]!r}")
        return sequence(first)

    def output_file(self, output: str, name: str, allocation_id: str) -> str:
        return os.path.join(os.path.dirname(output), f"{name}.o{allocation_id}")

    def status(self, name_prefix: str, user: str, ids: Sequence[str]) -> list[str]:
        # The allocations by id, finished ones too (-x): how each ended, while the server keeps
        # its history. PBS's full form has no -u; the ids are this cluster's own.
        return ["qstat", "-x", "-f", "-F", "json", *ids]

    def answered(self, code: int, stdout: str, stderr: str) -> bool:
        if code == 0:
            return True
        # Ids the server no longer knows (its history purged) fail the command, not the others.
        lines = [line for line in stderr.splitlines() if line.strip()]
        return bool(lines) and all(UNKNOWN_JOB.match(line.strip()) for line in lines)

    def states(self, stdout: str) -> dict[str, AllocationState]:
        found: dict[str, AllocationState] = {}
        for job_id, job in _jobs(stdout).items():
            state = str(job.get("job_state", ""))
            if state in QUEUED_STATES:
                found[sequence(job_id)] = AllocationState.QUEUED
            elif state in RUNNING_STATES:
                found[sequence(job_id)] = AllocationState.RUNNING
            elif state in FINISHED_STATES:
                # Exit_status: the script's, or negative when PBS could not run it (qsub(1B)).
                status = job.get("Exit_status", 0)
                found[sequence(job_id)] = AllocationState.ENDED if status == 0 else AllocationState.FAILED
        return found

    def cancel(self, ids: Sequence[str]) -> list[str]:
        return ["qdel", *ids]

    def script(self, worker: Sequence[str], workers: int, environment: Mapping[str, str]) -> str:
        if workers == 1:
            run = f"exec {quoted(worker)}\n"
        else:
            # pbsdsh -n I starts a task on the job's I-th chunk (one a host, place=scatter), with
            # the job's environment (the token came with qsub -v); each is told its index.
            run = (f"for i in $(seq 0 {workers - 1}); do\n"
                   f"  pbsdsh -n \"$i\" -- /usr/bin/env {NODE_INDEX}=\"$i\" {quoted(worker)} &\n"
                   "done\nwait\n")
        return ("#!/bin/bash\n"
                "# An allocation of Drover's (`drover alloc`): one Drover node on each host of it.\n"
                f"{exports(environment)}{run}")

    def allocation_id(self, environ: Mapping[str, str]) -> str | None:
        job = environ.get("PBS_JOBID")
        return sequence(job) if job else None

    def node_index(self, environ: Mapping[str, str]) -> int:
        given = given_index(environ)
        return given if given is not None else 0

    def time_left(self, allocation_id: str) -> list[str]:
        return ["qstat", "-f", "-F", "json", allocation_id]

    def seconds_left(self, stdout: str) -> float | None:
        """Resource_List.walltime less resources_used.walltime."""
        for job in _jobs(stdout).values():
            limits, used = job.get("Resource_List"), job.get("resources_used")
            limit = parse_walltime(limits.get("walltime")) if isinstance(limits, dict) else None
            spent = parse_walltime(used.get("walltime", 0)) if isinstance(used, dict) else 0.0
            if limit is not None:
                return max(limit - (spent or 0.0), 0.0)
        return None
