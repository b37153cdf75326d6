"""bhist: jobs' history as IBM Spectrum LSF's bhist tells it: by default the time each of the
user's unfinished jobs spent pending, suspended and running; -l each job's events (submitted,
dispatched, done or exited) in LSF's words. -a every job, -d finished ones, -p pending, -r
running, -s suspended; -u a user's (all: everyone's), -J by name."""

from __future__ import annotations

import fnmatch
import sys
import time

from drover.compat.lsf.common import (
    EXIT_FAILURE,
    host_name,
    long_time,
    parse_ref,
    queue_name,
    run,
    user_name,
)
from drover.compat.lsf.fields import FIELDS, Row, exec_host, rows
from drover.compat.lsf.syntax import Given, value
from drover.compat.optiontable import Arity, Mark, Option
from drover.core.errors import NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client

OPTIONS = [
    Option(("-a",), Arity.NONE, Mark.SUPPORTED, "finished jobs too (by default, unfinished ones only)"),
    Option(("-d",), Arity.NONE, Mark.SUPPORTED, "finished jobs only"),
    Option(("-p",), Arity.NONE, Mark.SUPPORTED, "pending jobs only"),
    Option(("-r",), Arity.NONE, Mark.SUPPORTED, "running jobs only"),
    Option(("-s",), Arity.NONE, Mark.SUPPORTED, "suspended jobs only"),
    Option(("-l",), Arity.NONE, Mark.SUPPORTED, "each job's events, in LSF's words"),
    Option(("-w",), Arity.NONE, Mark.SUPPORTED, "wide: names are not cut"),
    Option(("-u",), Arity.REQUIRED, Mark.SUPPORTED, "this user's jobs; `all` everyone's", "user_name | all"),
    Option(("-J",), Arity.REQUIRED, Mark.SUPPORTED, "jobs of this name (`*` matches any text)", "job_name"),
    Option(("-n",), Arity.REQUIRED, Mark.MEANINGLESS, "the history is not in log files: every job's is searched",
           "num_logfiles"),
    Option(("-h",), Arity.NONE, Mark.SUPPORTED, "print the usage"),
    Option(("-V",), Arity.NONE, Mark.SUPPORTED, "print Drover's version, as LSF's release"),
]
USAGE = """Usage: bhist [-h] [-V] [-a | -d | -p | -r | -s] [-l | -w] [-n num_logfiles]
             [-u user_name | -u all] [-J job_name] [job_ID | "job_ID[index]"] ..."""
STATES = ("PEND", "PSUSP", "RUN", "USUSP", "SSUSP", "UNKWN")


def main(argv: list[str] | None = None) -> int:
    return run("bhist", argv, OPTIONS, USAGE, _show)


def _show(client: Client, given: list[Given], operands: list[str]) -> int:
    keys = {g.key for g in given}
    selected, status = _select(client, given, keys, operands)
    if not selected:
        if status == 0:
            print("No matching job found", file=sys.stderr)
        return EXIT_FAILURE
    if "l" in keys:
        for row in selected:
            print(history(row))
            print("-" * 78)
    else:
        _summary(selected, "w" in keys)
    return status


def _select(client: Client, given: list[Given], keys: set[str], operands: list[str]) -> tuple[list[Row], int]:
    status = 0
    selected: list[Row] = []
    if operands:
        for word in operands:
            ref = parse_ref(word)
            try:
                job = client.job(ref[0]) if ref is not None else None
            except NotFound:
                job = None
            found = [r for r in rows(job) if ref is not None and (ref[1] is None or r.index == ref[1])] if job else []
            if not found:
                print(f"{word}: No matching job found", file=sys.stderr)
                status = EXIT_FAILURE
            selected += found
        return selected, status
    user = value(given, "u") or user_name()
    listing = client.jobs(user=None if user == "all" else user, include_ended=True)
    name = value(given, "J")
    if name:
        listing = [job for job in listing if fnmatch.fnmatchcase(job.name, name)]
    wanted = {"d": ("DONE", "EXIT"), "p": ("PEND", "PSUSP"), "r": ("RUN",), "s": ("USUSP", "SSUSP", "PSUSP")}
    states = next((wanted[k] for k in wanted if k in keys), None)
    for job in listing:
        for row in rows(client.job(job.id)):
            finished = row.state in ("DONE", "EXIT")
            if states is not None and row.state not in states:
                continue
            if states is None and "a" not in keys and finished:
                continue
            selected.append(row)
    return selected, status


def seconds_in(row: Row, now: float) -> dict[str, int]:
    """The time the job spent in each state: pending until its first start, running after
    (its suspensions counted as running: Drover keeps no times of them), by LSF's names."""
    out = dict.fromkeys(STATES, 0)
    attempts = [a for a in row.task.attempts if a.started_at is not None]
    end = row.task.state_since if row.state in ("DONE", "EXIT") else now
    if attempts:
        out["PEND"] = int(attempts[0].started_at - row.job.submitted_at) if attempts[0].started_at else 0
        out["RUN"] = int(sum(((a.ended_at or end) - (a.started_at or end)) for a in attempts))
    elif row.state == "PSUSP":
        out["PSUSP"] = int(end - row.job.submitted_at)
    else:
        out["PEND"] = int(end - row.job.submitted_at)
    return out


def _summary(selected: list[Row], wide: bool) -> None:
    now = time.time()
    print("Summary of time in seconds spent in various states:")
    print(f"{'JOBID':<7} {'USER':<7} {'JOB_NAME':<9} " + " ".join(f"{s:<7}" for s in STATES) + " TOTAL")
    for row in selected:
        spent = seconds_in(row, now)
        name = row.name if wide or len(row.name) <= 9 else "*" + row.name[-8:]
        user = row.job.owner if wide or len(row.job.owner) <= 7 else row.job.owner[:6] + "*"
        print(f"{row.ident:<7} {user:<7} {name:<9} " + " ".join(f"{spent[s]:<7}" for s in STATES)
              + f" {sum(spent.values())}")


def history(row: Row) -> str:
    """bhist -l: the job's events in LSF's words, then the time spent in each state."""
    job = row.job
    lines = ["", f"Job <{row.ident}>, Job Name <{row.name}>, User <{job.owner}>, Project <default>, "
             f"Command <{job.name}>",
             f"{long_time(job.submitted_at)}: Submitted from host <{host_name()}>, to Queue <{queue_name(job.queue)}>, "
             f"CWD <{job.submit_dir or job.workdir}>" + (f", Output File <{FIELDS['output_file'](row)}>" if job.output else "")
             + (f", {job.cpus} Task(s)" if job.cpus > 1 else "") + ";"]
    for attempt in row.task.attempts:
        hosts = exec_host(row)
        lines.append(f"{long_time(attempt.dispatched_at)}: Dispatched {job.cpus} Task(s) on Host(s) <{hosts}>, "
                     f"Allocated {job.cpus} Slot(s) on Host(s) <{hosts}>;")
        if attempt.started_at is not None:
            lines.append(f"{long_time(attempt.started_at)}: Starting;")
            lines.append(f"{long_time(attempt.started_at)}: Running with execution home <{job.workdir}>, "
                         f"Execution CWD <{job.workdir}>;")
    if row.state in ("DONE", "EXIT"):
        stamp = row.task.state_since
        if row.task.state == "cancelled":
            lines.append(f"{long_time(stamp)}: Signal <KILL> requested by user or administrator <{job.owner}>;")
        code = FIELDS["exit_code"](row)
        how = "Done successfully" if row.state == "DONE" else (f"Exited with exit code {code}" if code else "Exited")
        lines.append(f"{long_time(stamp)}: {how}. The CPU time used is {FIELDS['cpu_used'](row).split()[0]} seconds;")
        if row.task.attempts:
            lines.append(f"{long_time(stamp)}: Post job process done successfully;")
    spent = seconds_in(row, time.time())
    lines += ["", f"Summary of time in seconds spent in various states by  {long_time(time.time())}",
              "  " + " ".join(f"{s:<8}" for s in STATES) + " TOTAL",
              "  " + " ".join(f"{spent[s]:<8}" for s in STATES) + f" {sum(spent.values())}", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
