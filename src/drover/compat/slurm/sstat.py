"""sstat: the steps of running jobs, in sstat's fields (src/sstat/sstat.c), options as
src/sstat/options.c reads them.

Drover records one step per job, its batch script: `sstat -j N` names no step and, as Slurm
does for a job with only its batch step, prints the header alone; `-a` or `-j N.batch` show it.
Drover measures a job's usage when it ends, so the usage fields of a running job are 0
(sstat warns); the step's node, task count, allocation and process ids are real."""

from __future__ import annotations

import sys
import time

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.slurm.common import (
    VERSION,
    Refused,
    command_line,
    reported,
    split_list,
)
from drover.compat.slurm.jobs import SlurmJob, slurm_jobs
from drover.compat.slurm.printfields import Field, Printer, choose
from drover.compat.slurm.sacct_columns import FIELDS as SACCT_FIELDS
from drover.compat.slurm.sacct_columns import Line

S, A, M, R = Mark.SUPPORTED, Mark.APPROXIMATED, Mark.MEANINGLESS, Mark.REFUSED
NONE, REQ, OPT = Arity.NONE, Arity.REQUIRED, Arity.OPTIONAL

OPTIONS = [
    Option(("-a", "--allsteps"), NONE, S, "the `.batch` step too"),
    Option(("--autocomplete",), REQ, S, "", "OPTION"),
    Option(("-e", "--helpformat"), NONE, S),
    Option(("-h", "--help"), NONE, S),
    Option(("-i", "--pidformat"), NONE, S, "`JobID,Nodelist,Pids`"),
    Option(("-j", "--jobs"), REQ, S, "`JOB`, `JOB_INDEX`, `JOB.batch`", "JOB[.STEP],..."),
    Option(("-n", "--noheader"), NONE, S),
    Option(("-o", "--fields", "--format"), REQ, S, "every field, `FIELD%WIDTH`", "FIELD_LIST"),
    Option(("--noconvert",), NONE, S),
    Option(("-p", "--parsable"), NONE, S),
    Option(("-P", "--parsable2"), NONE, S),
    Option(("--usage",), NONE, S),
    Option(("-v", "--verbose"), NONE, M, "nothing more to say"),
    Option(("-V", "--version"), NONE, S),
    Option(("--json",), OPT, R, "the data_parser output is not produced", "[DATA_PARSER]"),
    Option(("--yaml",), OPT, R, "the data_parser output is not produced", "[DATA_PARSER]"),
]
DEFAULT = ("jobid,alloctres,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss,maxrssnode,maxrsstask,averss,"
           "maxpages,maxpagesnode,maxpagestask,avepages,mincpu,mincpunode,mincputask,avecpu,ntasks,avecpufreq,"
           "reqcpufreqmin,reqcpufreqmax,reqcpufreqgov,consumedenergy,maxdiskread,maxdiskreadnode,maxdiskreadtask,"
           "avediskread,maxdiskwrite,maxdiskwritenode,maxdiskwritetask,avediskwrite,tresusageinave,tresusageinmax,"
           "tresusageinmaxn,tresusageinmaxt,tresusageinmin,tresusageinminn,tresusageinmint,tresusageintot,"
           "tresusageoutave,tresusageoutmax,tresusageoutmaxn,tresusageoutmaxt,tresusageoutmin,tresusageoutminn,"
           "tresusageoutmint,tresusageouttot")
PID_FIELDS = "jobid,nodelist,pids"
# sstat's own table: its widths, in its order (src/sstat/sstat.c).
WIDTHS = [
    (10, "AllocTRES"), (10, "AveCPU"), (10, "AveCPUFreq"), (12, "AveDiskRead"), (12, "AveDiskWrite"),
    (10, "AvePages"), (10, "AveRSS"), (10, "AveVMSize"), (14, "ConsumedEnergy"), (17, "ConsumedEnergyRaw"),
    (-12, "JobID"), (12, "MaxDiskRead"), (15, "MaxDiskReadNode"), (15, "MaxDiskReadTask"), (12, "MaxDiskWrite"),
    (16, "MaxDiskWriteNode"), (16, "MaxDiskWriteTask"), (8, "MaxPages"), (12, "MaxPagesNode"),
    (14, "MaxPagesTask"), (10, "MaxRSS"), (10, "MaxRSSNode"), (10, "MaxRSSTask"), (10, "MaxVMSize"),
    (14, "MaxVMSizeNode"), (14, "MaxVMSizeTask"), (10, "MinCPU"), (10, "MinCPUNode"), (10, "MinCPUTask"),
    (20, "Nodelist"), (8, "NTasks"), (20, "Pids"), (10, "ReqCPUFreq"), (13, "ReqCPUFreqMin"),
    (13, "ReqCPUFreqMax"), (13, "ReqCPUFreqGov"), (14, "SLUID"), (14, "TRESUsageInAve"), (14, "TRESUsageInMax"),
    (18, "TRESUsageInMaxNode"), (18, "TRESUsageInMaxTask"), (14, "TRESUsageInMin"), (18, "TRESUsageInMinNode"),
    (18, "TRESUsageInMinTask"), (14, "TRESUsageInTot"), (15, "TRESUsageOutAve"), (15, "TRESUsageOutMax"),
    (19, "TRESUsageOutMaxNode"), (19, "TRESUsageOutMaxTask"), (15, "TRESUsageOutMin"), (19, "TRESUsageOutMinNode"),
    (19, "TRESUsageOutMinTask"), (15, "TRESUsageOutTot"),
]


def _value(name: str) -> Field[Line]:
    special = {"Nodelist": "NodeList", "Pids": None, "SLUID": None}
    target = special.get(name, name)
    field = next((f for f in SACCT_FIELDS if f.name == target), None) if target else None
    if field is None:
        return Field(0, name, lambda line: "")
    return field


FIELDS: list[Field[Line]] = [Field(width, name, _value(name).value) for width, name in WIDTHS]


def main(argv: list[str] | None = None) -> int:
    parsed = command_line("sstat", argv, OPTIONS, hint=False)
    if isinstance(parsed, int):
        return parsed
    return reported("sstat", lambda: _run(*parsed))


def _run(found: list[tuple[Option, str | None]], operands: list[str]) -> int:
    values: dict[str, list[str]] = {}
    flags: set[str] = set()
    for option, value in found:
        if option.mark is Mark.REFUSED:
            raise Refused(f"{option.names[-1]} is not supported by Drover: {option.note}")
        if value is None:
            flags.add(option.key)
        else:
            values.setdefault(option.key, []).append(value)
    if "version" in flags:
        print(VERSION)
        return 0
    if flags & {"help", "usage"}:
        print("Usage: sstat [options] -j <job(.stepid)>")
        return 0
    if "helpformat" in flags:
        names = [name for _, name in WIDTHS]
        for i in range(0, len(names), 4):
            print("".join(f"{name:<20}" for name in names[i:i + 4]).rstrip())
        return 0
    words = [w for text in values.get("jobs", []) + operands for w in split_list(text)]
    if not words:
        raise Refused("You didn't give me any jobs to stat.")
    text = ",".join(values.get("fields", [])) + ("," + PID_FIELDS if "pidformat" in flags else "")
    fields = choose(text.strip(",") or DEFAULT, FIELDS)
    parsable = "between" if "parsable2" in flags else ("ending" if "parsable" in flags else None)
    printer: Printer[Line] = Printer(fields, parsable, header="noheader" not in flags)
    rows, errors = _steps(words, "allsteps" in flags)
    for line in printer.lines(rows):
        print(line)
    for message in errors:
        print(f"sstat: error: {message}", file=sys.stderr)
    if rows and any(field.name not in ("JobID", "Nodelist", "NTasks", "AllocTRES", "Pids") for field in fields):
        print("sstat: warning: Drover measures usage when a job ends: a running step shows 0", file=sys.stderr)
    return 0


def _steps(words: list[str], all_steps: bool) -> tuple[list[Line], list[str]]:
    from drover.client.client import Client
    from drover.core.errors import NotFound

    rows: list[Line] = []
    errors: list[str] = []
    now = time.time()
    with Client() as client:
        for word in words:
            body, _, step = word.partition(".")
            job_text, _, index_text = body.partition("_")
            if not (job_text.isascii() and job_text.isdigit()) or (index_text and not (index_text.isascii() and index_text.isdigit())):
                raise Refused(f"Invalid job id: {word}")
            if step and step != "batch":
                errors.append(f"StepId={word} not found running.")
                continue
            try:
                info = client.job(int(job_text))
            except NotFound:
                errors.append(f"couldn't get steps for JobId={body}")
                continue
            running: list[SlurmJob] = [job for job in slurm_jobs(info, now) if job.state == "RUNNING" and (
                not index_text or job.index == int(index_text))]
            if not running:
                errors.append(f"No steps running for JobId={body}" if not step else
                              f"StepId={word} not found running.")
                continue
            if step or all_steps:
                rows += [Line(job, "batch") for job in running]
    return rows, errors
