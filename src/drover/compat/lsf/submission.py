"""From bsub's options to a Drover job: what each option means, decided once, on plain data.

LSF's defaults: the job runs where bsub ran (-cwd chooses another directory) with all of bsub's
environment (-env chooses less); with no -o its output, errors too, goes to `ID.out` in that
directory (an array's elements to `ID_INDEX.out`; LSF would mail it); -o and -e append, -oo and
-eo overwrite. Pure: the caller passes
the environment and directories, and `approximate` (warn, or refuse under DROVER_COMPAT_STRICT=1).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from drover.compat.gridengine.submission import _binary_script as command_script
from drover.compat.gridengine.submission import _script as script_for_shell
from drover.compat.lsf.common import drover_queue
from drover.compat.lsf.syntax import Given, LsfUsageError, every, value
from drover.compat.lsf.values import (
    Dependency,
    LsfValueError,
    Requirement,
    begin_time,
    dependencies,
    environment_spec,
    job_name,
    requirement,
    run_limit_s,
    size_mib,
)
from drover.compat.optiontable import Mark
from drover.core.errors import BadRequest
from drover.protocol.plain import JobRequest

# The built-in parallel environment of jobs on several nodes (as sbatch -N and PBS's chunks use
# it): each of its nodes holds exactly pe_per_node of its slots.
ACROSS_NODES = "slurm"
EXIT_BAD_VALUE = 255
DEFAULT_PATH = "/usr/local/bin:/bin:/usr/bin"
# The variable that marks a job as bsub's, for the LSF variables it gets when it runs
# (shepherd/lsf_environment.py): the host it was submitted from, as LSF gives it.
MARKER = "LSB_SUB_HOST"


@dataclass(frozen=True)
class Context:
    """What bsub knows besides its options."""

    cwd: str
    home: str
    user: str
    host: str
    environ: dict[str, str]
    now: float
    unit: str = "KB"  # LSF_UNIT_FOR_LIMITS
    is_dir: Callable[[str], bool] = os.path.isdir


@dataclass
class Submission:
    job: JobRequest
    array: bool = False
    block: bool = False  # -K
    interactive: str = ""  # "I", "Ip" or "Is"
    queue_given: bool = False
    named: list[Dependency] = field(default_factory=list)  # -w conditions on job names, for bsub to find


def build(given: list[Given], script: str, name_default: str, arguments: list[str], ctx: Context,
          approximate: Callable[[str], None]) -> Submission:
    """`script`: the job's script; `name_default`: its name when -J gives none."""
    try:
        return _build(given, script, name_default, arguments, ctx, approximate)
    except LsfValueError as error:
        raise LsfUsageError(str(error), EXIT_BAD_VALUE, usage=False) from None


def _build(given: list[Given], script: str, name_default: str, arguments: list[str], ctx: Context,
           approximate: Callable[[str], None]) -> Submission:
    keys = {g.key for g in given}
    for g in given:
        if g.option.mark is Mark.REFUSED:
            raise BadRequest(f"{g.option.names[0]} is not supported by Drover: {g.option.note}")
        if g.option.mark is Mark.APPROXIMATED:
            approximate(f"{g.option.names[0]} {g.value or ''}: {g.option.note}".replace(" :", ":"))
    name, array, slots_at_once = job_name(value(given, "J")) if "J" in keys else (name_default, None, None)
    name = name or name_default
    if "\n" in name:
        raise LsfValueError(f"{name}: Bad job name. Job not submitted.")
    workdir = os.path.normpath(os.path.join(ctx.cwd, value(given, "cwd"))) if "cwd" in keys else ctx.cwd
    job: JobRequest = {"script": "", "name": name, "workdir": workdir, "submit_dir": ctx.cwd, "hold": "H" in keys}
    if array is not None:
        job["array"] = array + (f"%{slots_at_once}" if slots_at_once else "")
    submission = Submission(job, array=array is not None, block="K" in keys, queue_given="q" in keys)
    submission.interactive = next((k for k in ("Is", "Ip", "I") if k in keys), "")
    _output(given, job, ctx)
    _layout(given, job, ctx, approximate)
    if "W" in keys:
        job["time_limit_s"] = run_limit_s(value(given, "W"))
    if "q" in keys:
        job["queue"] = drover_queue(value(given, "q").strip())
    if "b" in keys:
        job["begin_at"] = begin_time(value(given, "b"), ctx.now)
    if "x" in keys:
        job["exclusive"] = True
    if "r" in keys or "rn" in keys:
        job["rerunnable"] = "rn" not in keys
    if "sp" in keys:
        text = value(given, "sp")
        if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 100:
            raise LsfValueError(f"{text}: Bad user priority. Job not submitted.")
        job["priority"] = round((int(text) - 1) * 1023 / 99)
    limit = value(given, "p") or value(given, "T")
    if limit:
        if not limit.isascii() or not limit.isdigit() or int(limit) < 1:
            raise LsfValueError(f"{limit}: Bad process limit. Job not submitted.")
        job["pids_max"] = int(limit)
    if "E" in keys:
        job["prolog"] = value(given, "E")
    if "Ep" in keys:
        job["epilog"] = value(given, "Ep")
    if "Jd" in keys:
        job["comment"] = value(given, "Jd")
    if "B" in keys or "N" in keys:
        job["mail_user"] = value(given, "u") or ctx.user
        job["mail_type"] = [kind for key, kind in (("B", "BEGIN"), ("N", "END")) if key in keys]
    if "w" in keys:
        found, any_one = dependencies(value(given, "w"))
        for dependency in found:
            if dependency.approximate:
                approximate(f"-w: {dependency.approximate}")
        job["dependencies"] = [{"kind": d.kind, "job": d.job, "task": d.task} for d in found if d.job is not None]
        submission.named = [d for d in found if d.job is None]
        if any_one and len(found) > 1:
            job["dependency_any"] = True
    job["environment"] = environment(given, ctx)
    shell = value(given, "L") or None
    job["script"] = script_for_shell(script, arguments, shell)
    return submission


def command_line_script(words: list[str], shell: str | None = None) -> str:
    """`bsub command args`: LSF runs the command line with /bin/sh (-L: that shell), its words
    joined by blanks."""
    return command_script(words[0], words[1:], shell, True)


def _output(given: list[Given], job: JobRequest, ctx: Context) -> None:
    """-o/-oo and -e/-eo as Drover's output patterns; without -e the errors go with the output."""
    out = next((g for g in reversed(given) if g.key in ("o", "oo")), None)
    err = next((g for g in reversed(given) if g.key in ("e", "eo")), None)
    base = job["workdir"]
    # Without -o, each element of an array gets its own file: they would overwrite one another's.
    default = "%j_%a.out" if "array" in job and out is None else "%j.out"
    job["output"] = _path(out.value or "" if out else "", base, default, ctx)
    job["error"] = _path(err.value or "", base, "%j.err", ctx) if err else None
    if (out is not None and out.key == "o") or (err is not None and err.key == "e"):
        job["open_mode"] = "append"


def _path(text: str, base: str, default: str, ctx: Context) -> str:
    """A path as bsub takes it, relative to the job's directory: `%J` the job id, `%I` the
    element's index; a directory (or a path ending in /) gets the default name in it."""
    if not text:
        return os.path.join(base.replace("%", "%%"), default)
    full = os.path.join(base, text)
    if text.endswith("/") or ctx.is_dir(full):
        return os.path.join(full.replace("%", "%%"), default)
    pattern = os.path.normpath(full).replace("%", "%%").replace("%%J", "%j").replace("%%I", "%a")
    return pattern


def _layout(given: list[Given], job: JobRequest, ctx: Context, approximate: Callable[[str], None]) -> None:
    """-n, -R, -M, -nnodes and -gpu: the job's slots, how they spread over hosts, its memory and
    its GPUs."""
    slots = 1
    if "n" in {g.key for g in given}:
        text = value(given, "n")
        numbers = text.split(",")
        if not 1 <= len(numbers) <= 2 or not all(n.isascii() and n.isdigit() and int(n) > 0 for n in numbers):
            raise LsfValueError(f"{text}: Bad argument for option -n. Job not submitted.")
        slots = int(numbers[-1])
    wanted = Requirement()
    for text in every(given, "R"):
        requirement(text, wanted)
    per_host = None
    hosts = wanted.span.get("hosts")
    if hosts is not None and hosts not in ("1", "-1"):
        raise LsfValueError(f"span[hosts={hosts}]: Bad resource requirement syntax. Job not submitted.")
    if hosts == "-1":
        approximate("-R span[hosts=-1]: the job's slots are placed as the scheduler chooses")
    ptile = wanted.span.get("ptile")
    if ptile is not None:
        if not ptile.isascii() or not ptile.isdigit() or int(ptile) < 1:
            approximate(f"-R span[ptile={ptile}]: read as one host")
        else:
            per_host = int(ptile)
    for key in wanted.span:
        if key not in ("hosts", "ptile"):
            approximate(f"-R span[{key}]: ignored")
    nodes = value(given, "nnodes")
    if nodes:
        if not nodes.isascii() or not nodes.isdigit() or int(nodes) < 1:
            raise LsfValueError(f"{nodes}: Bad argument for option -nnodes. Job not submitted.")
        if int(nodes) > 1:
            per_host = max(slots // int(nodes), 1)
            slots = per_host * int(nodes)
    if per_host is not None and slots > per_host and hosts != "1":
        if slots % per_host:
            raise BadRequest(f"-n {slots} with span[ptile={per_host}]: Drover holds the same slots on each "
                             "host of a job; ask for a multiple of ptile")
        job["cpus"], job["pe"], job["pe_slots"], job["pe_per_node"] = 1, ACROSS_NODES, str(slots), per_host
    else:
        job["cpus"] = slots
    memory = value(given, "M").rstrip("!")
    if memory:
        job["memory_mib"] = size_mib(memory, ctx.unit)
    elif "mem" in wanted.rusage:
        job["memory_mib"] = size_mib(wanted.rusage["mem"], ctx.unit)
    for key in wanted.rusage:
        if key not in ("mem", "duration", "decay"):
            job.setdefault("resource_requests", {})[key] = wanted.rusage[key]
    for section in wanted.other:
        approximate(f"-R {section}[]: ignored")
    features = [s for s in wanted.select if s]
    for selection in features:
        names = [part.strip() for part in selection.split("&&")]
        if all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", n) for n in names):
            job["constraint"] = "&".join(filter(None, [job.get("constraint"), *names]))
        else:
            approximate(f"-R select[{selection}]: only host features (select[a && b]) are honoured; ignored")
    gpu = value(given, "gpu")
    if gpu:
        _gpus(gpu, job, approximate)


def _gpus(text: str, job: JobRequest, approximate: Callable[[str], None]) -> None:
    """-gpu `num=N[/task|/host][:mode=...]`: N GPUs on the job's node; `-` the default, one."""
    count = "1"
    for item in text.split(":"):
        key, _, amount = item.partition("=")
        if key.strip() == "num":
            count = amount.split("/")[0].strip()
        elif item.strip() not in ("", "-"):
            approximate(f"-gpu {item.strip()}: ignored")
    if not count.isascii() or not count.isdigit():
        raise LsfValueError(f"{text}: Bad GPU requirement. Job not submitted.")
    if count != "0":
        job["gres"] = [f"gpu:{count}"]


def environment(given: list[Given], ctx: Context) -> dict[str, str]:
    """-env: all of bsub's environment (the default), none of it, or the variables named (each
    -env adds to those before it: `-env all` then `-env NAME=VALUE`); and the variables that
    mark the job as bsub's."""
    specs = [environment_spec(text) for text in every(given, "env")] or [environment_spec("all")]
    everything = any(spec.everything for spec in specs)
    env = dict(ctx.environ) if everything else {}
    for spec in specs:
        for name in spec.excluded:
            env.pop(name, None)
        for name, setting in spec.chosen:
            if setting is not None:
                env[name] = setting
            elif name in ctx.environ:
                env[name] = ctx.environ[name]
    env.setdefault("PATH", DEFAULT_PATH)
    for name in ("LSB_OUTPUTFILE", "LSB_ERRORFILE"):
        env.pop(name, None)  # another job's; the shepherd sets this job's
    out = next((g for g in reversed(given) if g.key in ("o", "oo")), None)
    err = next((g for g in reversed(given) if g.key in ("e", "eo")), None)
    if out is not None:
        env["LSB_OUTPUTFILE"] = out.value or ""
    if err is not None:
        env["LSB_ERRORFILE"] = err.value or ""
    env[MARKER] = ctx.host
    return env
