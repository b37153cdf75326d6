"""bjobs: jobs as IBM Spectrum LSF's bjobs shows them: its default table (JOBID USER STAT QUEUE
FROM_HOST EXEC_HOST JOB_NAME SUBMIT_TIME), -w without cutting, -l the long form, -o the fields
named (-json as LSF writes it); unfinished jobs by default, -a all, -d finished, -r running, -p
pending, -s suspended; -u a user's (all: everyone's), -J by name."""

from __future__ import annotations

import fnmatch
import json
import shlex
import sys

from drover.compat.lsf.common import (
    EXIT_FAILURE,
    long_time,
    parse_ref,
    queue_name,
    run,
    user_name,
)
from drover.compat.lsf.fields import (
    DEFAULT_COLUMNS,
    FIELDS,
    WIDTHS,
    Row,
    exec_host,
    field_name,
    rows,
)
from drover.compat.lsf.syntax import Given, LsfUsageError, approximate, value
from drover.compat.optiontable import Arity, Mark, Option
from drover.core.errors import NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client

OPTIONS = [
    Option(("-a",), Arity.NONE, Mark.SUPPORTED, "finished jobs too"),
    Option(("-d",), Arity.NONE, Mark.SUPPORTED, "finished jobs only"),
    Option(("-p",), Arity.NONE, Mark.SUPPORTED, "pending jobs only (PEND, PSUSP), with why they wait"),
    Option(("-r",), Arity.NONE, Mark.SUPPORTED, "running jobs only"),
    Option(("-s",), Arity.NONE, Mark.SUPPORTED, "suspended jobs only (USUSP, SSUSP, PSUSP)"),
    Option(("-l",), Arity.NONE, Mark.SUPPORTED, "the long form"),
    Option(("-w",), Arity.NONE, Mark.SUPPORTED, "wide: names and hosts are not cut"),
    Option(("-W",), Arity.NONE, Mark.SUPPORTED, "wide, with start and finish times"),
    Option(("-noheader",), Arity.NONE, Mark.SUPPORTED, "no header line"),
    Option(("-o",), Arity.REQUIRED, Mark.SUPPORTED, "these fields (`jobid stat exit_code:8 ... delimiter=','`)",
           '"field_name[:[-]width] ... [delimiter=\'char\']"'),
    Option(("-json",), Arity.NONE, Mark.SUPPORTED, "with -o: JSON as LSF writes it (COMMAND, JOBS, RECORDS)"),
    Option(("-u",), Arity.REQUIRED, Mark.SUPPORTED, "this user's jobs; `all` everyone's", "user_name | all"),
    Option(("-J",), Arity.REQUIRED, Mark.SUPPORTED, "jobs of this name (`*` matches any text)", "job_name"),
    Option(("-q",), Arity.REQUIRED, Mark.SUPPORTED, "jobs of this queue", "queue_name"),
    Option(("-m",), Arity.REQUIRED, Mark.SUPPORTED, "jobs that run on this host", "host_name"),
    Option(("-A",), Arity.NONE, Mark.APPROXIMATED, "an array is shown element by element"),
    Option(("-UF",), Arity.NONE, Mark.SUPPORTED, "-l unformatted (its lines are not wrapped either)"),
    Option(("-X",), Arity.NONE, Mark.MEANINGLESS, "hosts are always shown by name"),
    Option(("-h",), Arity.NONE, Mark.SUPPORTED, "print the usage"),
    Option(("-V",), Arity.NONE, Mark.SUPPORTED, "print Drover's version, as LSF's release"),
]
USAGE = """Usage: bjobs [-h] [-V] [-A] [-a] [-d] [-p] [-r] [-s] [-l | -w | -W] [-UF] [-noheader]
             [-o "field_name[:[-]width] ... [delimiter='char']" [-json]]
             [-u user_name | -u all] [-J job_name] [-q queue_name] [-m host_name]
             [job_ID | "job_ID[index_list]"] ..."""
SUSPENDED = ("USUSP", "SSUSP", "PSUSP")


def main(argv: list[str] | None = None) -> int:
    return run("bjobs", argv, OPTIONS, USAGE, _act, _check)


def _check(given: list[Given], operands: list[str]) -> None:
    approximate("bjobs", given)
    keys = {g.key for g in given}
    if "o" in keys:
        _columns(value(given, "o"))  # refused here, before the cluster is asked
    elif "json" in keys:
        raise LsfUsageError("bjobs: -json must be used with -o", usage=False)


def _act(client: Client, given: list[Given], operands: list[str]) -> int:
    keys = {g.key for g in given}
    columns = _columns(value(given, "o")) if "o" in keys else None
    return _show(client, given, keys, operands, columns)


def _columns(text: str) -> tuple[list[tuple[str, int | None]], str | None]:
    """-o's fields, each with the width given (None: its default), and the delimiter."""
    try:
        words = shlex.split(text.replace("delimiter=", "delimiter= "))
    except ValueError:
        raise LsfUsageError(f"bjobs: -o {text}: bad format", usage=False) from None
    out: list[tuple[str, int | None]] = []
    delimiter = None
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "delimiter=":
            delimiter = words[i] if i < len(words) else " "
            i += 1
            continue
        name, _, width = word.partition(":")
        field = field_name(name)
        if field is None:
            raise LsfUsageError(f"{name}: Illegal field name. Job not displayed.", usage=False)
        width_text = width.split(":")[0].lstrip("-")
        out.append((field, int(width_text) if width_text.isdigit() else None))
    if not out:
        raise LsfUsageError("bjobs: -o: no field given", usage=False)
    return out, delimiter


def _show(client: Client, given: list[Given], keys: set[str], operands: list[str],
          columns: tuple[list[tuple[str, int | None]], str | None] | None) -> int:
    status = 0
    errors: list[tuple[str, str]] = []
    selected: list[Row] = []
    words = [word for operand in operands for word in operand.split(",") if word]
    if words:
        for word in words:
            ref = parse_ref(word)
            job = None
            if ref is not None:
                try:
                    job = client.job(ref[0])
                except NotFound:
                    job = None
            found = [row for row in rows(job) if ref is not None and (ref[1] is None or row.index == ref[1])] \
                if job is not None else []
            if not found:
                errors.append((word, f"Job <{word}> is not found"))
                status = EXIT_FAILURE
            selected += found
    else:
        user = value(given, "u") or user_name()
        finished = bool(keys & {"a", "d"})
        listing = client.jobs(user=None if user == "all" else user, include_ended=finished)
        name = value(given, "J")
        if name:
            listing = [job for job in listing if fnmatch.fnmatchcase(job.name, name)]
        queue = value(given, "q")
        if queue:
            listing = [job for job in listing if queue_name(job.queue) == queue]
        jobs = [client.job(job.id) for job in listing]
        selected = [row for job in jobs for row in rows(job) if _wanted(row, keys)]
        host = value(given, "m")
        if host:
            selected = [row for row in selected if host in {node for node, _ in row.hosts()}]
        if not selected and columns is None:
            print(_nothing(keys), file=sys.stderr)
            return EXIT_FAILURE
    if columns is not None:
        _fields(selected, errors, columns, "json" in keys, "noheader" in keys)
        return status
    for _word, message in errors:
        print(message, file=sys.stderr)
    if "l" in keys or "UF" in keys:
        _long(selected)
    elif selected:
        _table(selected, wide=bool(keys & {"w", "W"}), header="noheader" not in keys, reasons="p" in keys)
    return status


def _wanted(row: Row, keys: set[str]) -> bool:
    state = row.state
    if "d" in keys:
        return state in ("DONE", "EXIT")
    if "a" not in keys and state in ("DONE", "EXIT"):
        return False
    if "r" in keys and state != "RUN":
        return False
    if "p" in keys and state not in ("PEND", "PSUSP"):
        return False
    return not ("s" in keys and state not in SUSPENDED)


def _nothing(keys: set[str]) -> str:
    for key, word in (("d", "done"), ("r", "running"), ("p", "pending"), ("s", "suspended")):
        if key in keys:
            return f"No {word} job found"
    return "No job found" if "a" in keys else "No unfinished job found"


def _cut(text: str, width: int, wide: bool) -> str:
    """A value as LSF fits it to its column: the end of it, after `*`."""
    return text if wide or len(text) <= width else "*" + text[-(width - 1):]


def _table(selected: list[Row], wide: bool, header: bool, reasons: bool) -> None:
    widths = [WIDTHS[c] for c in DEFAULT_COLUMNS]
    if header:
        print(" ".join(f"{c.upper():<{w}}" for c, w in zip(DEFAULT_COLUMNS, widths, strict=True)).rstrip())
    for row in selected:
        hosts = exec_host(row).split(":") if row.hosts() else [""]
        values = [FIELDS[c](row) for c in DEFAULT_COLUMNS]
        values[5] = hosts[0]
        cells = [_cut(text, w, wide) for text, w in zip(values, widths, strict=True)]
        print(" ".join(f"{text:<{w}}" for text, w in zip(cells, widths, strict=True)).rstrip())
        for more in hosts[1:]:
            print(" " * (sum(widths[:5]) + 5) + _cut(more, widths[5], wide))
        if reasons and row.state in ("PEND", "PSUSP"):
            print(f" {FIELDS['pend_reason'](row) or 'The job was suspended by the user while pending'};")


def _fields(selected: list[Row], errors: list[tuple[str, str]],
            columns: tuple[list[tuple[str, int | None]], str | None], as_json: bool, noheader: bool) -> None:
    names, delimiter = columns
    if as_json:
        records: list[dict[str, str]] = [{name.upper(): FIELDS[name](row) for name, _ in names} for row in selected]
        records += [{"JOBID": word, "ERROR": message} for word, message in errors]
        print(json.dumps({"COMMAND": "bjobs", "JOBS": len(records), "RECORDS": records}, indent=2))
        return
    for _word, message in errors:
        print(message, file=sys.stderr)
    if not selected:
        return
    widths = [width or max(WIDTHS.get(name, 15), len(name)) for name, width in names]
    joiner = delimiter if delimiter is not None else " "

    def line(cells: list[str]) -> str:
        if delimiter is not None:
            return joiner.join(cells)
        return joiner.join(f"{cell:<{w}}" for cell, w in zip(cells, widths, strict=True)).rstrip()

    if not noheader:
        print(line([name.upper() for name, _ in names]))
    for row in selected:
        print(line([FIELDS[name](row) or "-" for name, _ in names]))


def _long(selected: list[Row]) -> None:
    """bjobs -l: each job's story in LSF's words."""
    for row in selected:
        print(long_form(row))


def long_form(row: Row) -> str:
    job = row.job
    lines = ["", f"Job <{row.ident}>, Job Name <{row.name}>, User <{job.owner}>, Project <default>, "
             f"Status <{row.state}>, Queue <{queue_name(job.queue)}>, Command <{job.name}>"]
    requested = f", {job.cpus} Task(s)" if job.cpus > 1 else ""
    lines.append(f"{long_time(job.submitted_at)}: Submitted from host <{FIELDS['from_host'](row)}>, "
                 f"CWD <{job.submit_dir or job.workdir}>{requested}"
                 + (f", Output File <{FIELDS['output_file'](row)}>" if job.output else "")
                 + (f", Error File <{FIELDS['error_file'](row)}>" if job.error else "") + ";")
    if row.state in ("PEND", "PSUSP"):
        reason = FIELDS["pend_reason"](row) or ("The job was suspended by the user while pending"
                                                if row.state == "PSUSP" else "")
        if reason:
            lines += [" PENDING REASONS:", f" {reason};"]
    for attempt in row.task.attempts:
        if attempt.started_at is None:
            continue
        hosts = exec_host(row)
        lines.append(f"{long_time(attempt.started_at)}: Started {job.cpus} Task(s) on Host(s) <{hosts}>, "
                     f"Allocated {job.cpus} Slot(s) on Host(s) <{hosts}>, Execution CWD <{job.workdir}>;")
    if row.state in ("DONE", "EXIT"):
        stamp = row.task.attempts[-1].ended_at if row.task.attempts and row.task.attempts[-1].ended_at \
            else row.task.state_since
        how = "Done successfully" if row.state == "DONE" else _exit_words(row)
        lines.append(f"{long_time(stamp)}: {how}. The CPU time used is {FIELDS['cpu_used'](row).split()[0]} "
                     f"seconds.")
    lines.append("")
    if job.time_limit_s:
        lines += [" RUNLIMIT", f" {job.time_limit_s / 60:.1f} min", ""]
    if job.memory_mib:
        lines += [" MEMLIMIT", f"  {job.memory_mib} M", ""]
    if job.dependencies:
        lines += [f" DEPENDENCY CONDITION: {FIELDS['dependency'](row)}", ""]
    return "\n".join(lines)


def _exit_words(row: Row) -> str:
    code = FIELDS["exit_code"](row)
    if row.task.state == "cancelled" and not row.task.attempts:
        return "Exited; job has been killed while pending"
    return f"Exited with exit code {code}" if code else "Exited"


if __name__ == "__main__":
    raise SystemExit(main())
