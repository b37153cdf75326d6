"""sprio: the priority of pending jobs, in sprio's `%` fields (src/sprio/opts.c, print.c).

Drover orders pending jobs by the priority each job was given (sbatch --nice, scontrol update
Priority) and then by submission; it has no multifactor plugin. sprio shows that as Slurm shows
a job whose priority was set directly: PRIORITY (and SITE) is the priority, and every other
factor (age, fair share, job size, partition, QOS, TRES) is 0, as are their weights (`-w`)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.slurm import columns as fmt
from drover.compat.slurm.columns import Column
from drover.compat.slurm.common import (
    VERSION,
    Refused,
    command_line,
    load_jobs,
    reported,
    split_list,
    user_names,
)
from drover.compat.slurm.jobs import SlurmJob, slurm_jobs
from drover.core.limits import MAX_ID

S, M, R = Mark.SUPPORTED, Mark.MEANINGLESS, Mark.REFUSED
NONE, REQ, OPT = Arity.NONE, Arity.REQUIRED, Arity.OPTIONAL
ONE_CLUSTER = "Drover is one cluster"

OPTIONS = [
    Option(("--autocomplete",), REQ, S, "", "OPTION"),
    Option(("-h", "--noheader"), NONE, S),
    Option(("-j", "--jobs"), OPT, S, "", "[JOB_LIST]"),
    Option(("-l", "--long"), NONE, S),
    Option(("-M", "--cluster", "--clusters"), REQ, M, ONE_CLUSTER, "CLUSTER"),
    Option(("-n", "--norm"), NONE, S, "factors as fractions of 1"),
    Option(("-o", "--format"), REQ, S, "every letter, `%[.][SIZE]LETTER`", "FORMAT"),
    Option(("-S", "--sort"), REQ, S, "letters of `-o`, `-` for descending", "SORT_LIST"),
    Option(("-p", "--partition"), REQ, S, "a Drover queue", "PARTITION_LIST"),
    Option(("-u", "--user", "--users"), REQ, S, "", "USER_LIST"),
    Option(("-v", "--verbose"), NONE, M, "nothing more to say"),
    Option(("-V", "--version"), NONE, S),
    Option(("-w", "--weights"), NONE, S, "every weight is 0: Drover has no multifactor priority"),
    Option(("--federation",), NONE, M, ONE_CLUSTER),
    Option(("--help",), NONE, S),
    Option(("--helpformat",), NONE, S),
    Option(("--local",), NONE, M, ONE_CLUSTER),
    Option(("--sibling", "--sib"), NONE, M, ONE_CLUSTER),
    Option(("--usage",), NONE, S),
]
SHORT = "%.15i %9r %.10Y %.10S"
LONG = "%.15i %9r %.8u %.8o %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10n %.10Q %.11N %.20T"
SHORT_NORM = "%.15i %9r %10y"
LONG_NORM = "%.15i %9r %.8u %.8o %10y %10a %10b %10f %10j %10p %10n %10q %20t"


@dataclass(frozen=True)
class Row:
    job: SlurmJob | None  # None: the weights line of -w


def _weighted(header: str, letter: str) -> Column[Row]:
    return Column(header, letter, header, lambda row: "0")


def _normalized(header: str, letter: str) -> Column[Row]:
    return Column(header, letter, header, lambda row: "0" if row.job is None else f"{0:.7f}")


COLUMNS: list[Column[Row]] = [
    _normalized("AGE", "a"), _weighted("AGE", "A"), _normalized("ASSOC", "b"), _weighted("ASSOC", "B"),
    Column("CLUSTER", "c", "CLUSTER", lambda row: "drover"),
    _normalized("FAIRSHARE", "f"), _weighted("FAIRSHARE", "F"),
    Column("JOBID", "i", "JOBID", lambda row: "Weights" if row.job is None else str(row.job.job_id_text)),
    _normalized("JOBSIZE", "j"), _weighted("JOBSIZE", "J"),
    Column("QOSNAME", "n", "QOSNAME", lambda row: "" if row.job is None else "normal"),
    Column("NICE", "N", "NICE", lambda row: "" if row.job is None else "0"),
    Column("ACCOUNT", "o", "ACCOUNT", lambda row: ""),
    _normalized("PARTITION", "p"), _weighted("PARTITION", "P"),
    Column("PARTITION", "r", "PARTITION", lambda row: "" if row.job is None else row.job.info.queue),
    Column("SITE", "S", "SITE", lambda row: "0" if row.job is None else str(row.job.info.priority)),
    _normalized("QOS", "q"), _weighted("QOS", "Q"),
    Column("SLUID", "s", "SLUID", lambda row: ""),
    Column("USER", "u", "USER", lambda row: "" if row.job is None else row.job.user),
    Column("PRIORITY", "y", "PRIORITY", lambda row: "" if row.job is None else
           f"{max(row.job.info.priority, 0) / 0xFFFFFFFF:.7f}"),
    Column("PRIORITY", "Y", "PRIORITY", lambda row: "" if row.job is None else str(row.job.info.priority)),
    Column("TRES", "t", "TRES", lambda row: ""),
    Column("TRES", "T", "TRES", lambda row: ""),
]
LETTERS = fmt.by_letter(COLUMNS)


def main(argv: list[str] | None = None) -> int:
    parsed = command_line("sprio", argv, OPTIONS)
    if isinstance(parsed, int):
        return parsed
    return reported("sprio", lambda: _run(*parsed))


def _run(found: list[tuple[Option, str | None]], operands: list[str]) -> int:
    values: dict[str, str | None] = {}
    flags: set[str] = set()
    for option, value in found:
        if option.arity is not Arity.REQUIRED:
            flags.add(option.key)
        if option.arity is not Arity.NONE:
            values[option.key] = value
    if "version" in flags:
        print(VERSION)
        return 0
    if flags & {"help", "usage"}:
        print("Usage: sprio [-j jid[s]] [-u user_name[s]] [-o format] [-p partitions] [--federation] "
              "[--local] [--sibling] [--usage] [-hlnvVw]")
        return 0
    if "helpformat" in flags:
        print(" ".join(f"%{letter:<5}" for letter in sorted(LETTERS)))
        return 0
    if "long" in flags and values.get("format"):
        raise Refused("Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry.")
    if "jobs" in flags and values.get("jobs") is None and operands:
        values["jobs"] = operands.pop(0)
    if operands:
        raise Refused(f"Unrecognized option: {operands[0]}")
    chosen = values.get("format") or os.environ.get("SPRIO_FORMAT")
    if not chosen:
        norm, long = "norm" in flags, "long" in flags
        chosen = (LONG_NORM if long else SHORT_NORM) if norm else (LONG if long else SHORT)
        if values.get("user") and not long:
            chosen = chosen.replace("%9r", "%9r %.8u")
    errors: list[str] = []
    specs = fmt.parse_letters(chosen, LETTERS, errors)
    for message in errors:
        print(f"sprio: error: {message}", file=sys.stderr)
    rows = [Row(None)] if "weights" in flags else _pending(values)
    out = [] if "noheader" in flags else [fmt.header(specs)]
    out += [fmt.line(specs, row) for row in rows]
    print("\n".join(out))
    return 0


def _by(column: Column[Row]) -> Callable[[SlurmJob], str]:
    return lambda job: column.value(Row(job))


def _pending(values: dict[str, str | None]) -> list[Row]:
    from drover.client.client import Client

    words = split_list(values.get("jobs") or "")
    for word in words:  # as sprio: the id, or the array's id before _, in digits
        job = word.partition("_")[0]
        if not job.isascii() or not job.isdigit() or int(job) == 0 or len(job) > len(str(MAX_ID)):
            raise Refused(f"Invalid job id: {word}")
    ids = [int(word.partition("_")[0]) for word in words] or None
    users = user_names(values["user"] or "") if values.get("user") else None
    partitions = split_list(values["partition"] or "") if values.get("partition") else None
    now = time.time()
    with Client() as client:
        infos = load_jobs(client, ids, include_ended=False)
    lines = [job for info in infos for job in slurm_jobs(info, now) if job.state == "PENDING"]
    lines = [job for job in lines if (users is None or job.user in users) and (
        partitions is None or job.info.queue in partitions)]
    if ids is not None and not lines:
        raise Refused("Unable to find jobs matching user/id(s) specified")
    spec = values.get("sort")
    lines.sort(key=lambda job: (-job.info.priority, job.info.submitted_at))
    if spec:
        for key in reversed(split_list(spec)):
            column = LETTERS.get(key.lstrip("+-"))
            if column is None:
                raise Refused(f"Invalid sort specification: {key}")
            lines.sort(key=_by(column), reverse=key.startswith("-"))
    return [Row(job) for job in lines]
