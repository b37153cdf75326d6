"""IBM Spectrum LSF as an outer scheduler: bsub < script, bjobs -o, bkill, blaunch (tested
against Drover's own LSF front end by tests/integration/cluster/test_alloc_pbs_lsf.py).

An allocation is one job of N slots, one a host (`-n N -R "span[ptile=1]"`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from drover.cluster.outer.base import NODE_INDEX, Refused, Request, exports, given_index, quoted
from drover.core.allocations import AllocationState

# bjobs's STAT (bjobs(1)): before the job runs (or suspended), while it does, once it is over.
QUEUED_STATES = frozenset({"PEND", "PSUSP", "WAIT", "PROV", "USUSP", "SSUSP"})
RUNNING_STATES = frozenset({"RUN", "UNKWN"})  # UNKWN: mbatchd lost its host's sbatchd; the job may run on
SUBMITTED = re.compile(r"Job <(\d+)> is submitted to (?:default )?queue <[^>]*>\.")
NOT_FOUND = re.compile(r"Job <[^>]*> is not found")


def run_limit(seconds: float) -> str:
    """bsub -W's run limit in minutes, rounded down (at least one)."""
    return str(max(int(seconds // 60), 1))


def parse_time_left(text: str) -> float | None:
    """bjobs's time_left: `hours:minutes` then L (the run limit's) or E (an estimate); `-` none."""
    match = re.fullmatch(r"(\d+):(\d+)\s*[LE]?", text.strip())
    return float(int(match.group(1)) * 3600 + int(match.group(2)) * 60) if match else None


class Lsf:
    name = "lsf"
    script_on_stdin = True  # bsub < script: LSF spools the script and reads its #BSUB lines

    def submit(self, request: Request) -> list[str]:
        argv = ["bsub", "-J", request.name, "-n", str(request.workers), "-R", "span[ptile=1]",
                "-W", run_limit(request.time_limit_s), "-o", request.output.replace("%j", "%J"), "-rn"]
        if request.partition:
            argv += ["-q", request.partition]
        # The user's own arguments come last: they may override ours (bsub takes the last). bsub
        # passes its whole environment (the token) to the job.
        return [*argv, *request.extra_args]

    def submitted_id(self, stdout: str) -> str:
        match = SUBMITTED.search(stdout)
        if match is None:
            raise Refused(f"bsub said no job id: {stdout.strip()[:200]!r}")
        return match.group(1)

    def output_file(self, output: str, name: str, allocation_id: str) -> str:
        return output.replace("%j", allocation_id)

    def status(self, name_prefix: str, user: str, ids: Sequence[str]) -> list[str]:
        # By id, finished ones too (while mbatchd keeps them: DONE or EXIT).
        return ["bjobs", "-a", "-o", "jobid stat", "-noheader", *ids]

    def answered(self, code: int, stdout: str, stderr: str) -> bool:
        if code == 0:
            return True
        lines = [line for line in stderr.splitlines() if line.strip()]
        return bool(lines) and all(NOT_FOUND.fullmatch(line.strip()) for line in lines)

    def states(self, stdout: str) -> dict[str, AllocationState]:
        found: dict[str, AllocationState] = {}
        for line in stdout.splitlines():
            parts = line.split()
            if len(parts) != 2 or not parts[0].isdigit():
                continue
            job_id, state = parts
            if state in QUEUED_STATES:
                found[job_id] = AllocationState.QUEUED
            elif state in RUNNING_STATES:
                found[job_id] = AllocationState.RUNNING
            elif state == "DONE":
                found[job_id] = AllocationState.ENDED
            elif state in ("EXIT", "ZOMBI"):
                found[job_id] = AllocationState.FAILED
        return found

    def cancel(self, ids: Sequence[str]) -> list[str]:
        return ["bkill", *ids]

    def script(self, worker: Sequence[str], workers: int, environment: Mapping[str, str]) -> str:
        if workers == 1:
            run = f"exec {quoted(worker)}\n"
        else:
            # blaunch starts a task on a host of the job, with the job's environment; one a host
            # (span[ptile=1]: $LSB_HOSTS names each once), each told its index.
            run = ("i=0\n"
                   "for host in $LSB_HOSTS; do\n"
                   f"  blaunch \"$host\" /usr/bin/env {NODE_INDEX}=\"$i\" {quoted(worker)} &\n"
                   "  i=$((i + 1))\n"
                   "done\nwait\n")
        return ("#!/bin/bash\n"
                "# An allocation of Drover's (`drover alloc`): one Drover node on each host of it.\n"
                f"{exports(environment)}{run}")

    def allocation_id(self, environ: Mapping[str, str]) -> str | None:
        return environ.get("LSB_JOBID") or None

    def node_index(self, environ: Mapping[str, str]) -> int:
        given = given_index(environ)
        return given if given is not None else 0

    def time_left(self, allocation_id: str) -> list[str]:
        return ["bjobs", "-o", "time_left", "-noheader", allocation_id]

    def seconds_left(self, stdout: str) -> float | None:
        lines = stdout.strip().splitlines()
        return parse_time_left(lines[0]) if lines else None
