"""From qsub's options to a Drover job: what each option means, decided once, on plain data.

PBS's defaults: the job runs in the home directory (Torque's -d chooses another); its output
goes to `NAME.oSEQ` and its errors to `NAME.eSEQ` in the directory qsub ran in (a subjob's to
`NAME.oSEQ.INDEX`, Torque's `NAME.oSEQ-INDEX`); only the PBS_O_* variables and -v's reach the
job unless -V. Pure: the caller passes the environment and directories, and `approximate` (warn,
or refuse under DROVER_COMPAT_STRICT=1).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from drover.compat.gridengine.submission import _script as script_for_shell
from drover.compat.optiontable import Mark
from drover.compat.pbs.common import drover_queue
from drover.compat.pbs.syntax import Given, PbsUsageError, every
from drover.compat.pbs.values import (
    Chunk,
    PbsValueError,
    array_range,
    date_time,
    depend,
    duration_s,
    nodes,
    select,
    size_mib,
    torque_array,
)
from drover.compat.submit_context import Context
from drover.core.errors import BadRequest
from drover.protocol.plain import DependencyRequest, JobRequest

# The built-in parallel environment of jobs on several nodes (as sbatch -N uses it): each of its
# nodes holds exactly pe_per_node of its slots.
ACROSS_NODES = "slurm"
EXIT_BAD_VALUE = 1  # qsub: an illegal attribute or resource value
LOWEST_PRIORITY = -1023  # Drover's; PBS's is -1024


@dataclass
class Submission:
    job: JobRequest
    array: bool = False
    block: bool = False  # -W block=true: wait for the job's end, exit with its status
    interactive: bool = False
    quiet: bool = False  # -z
    resources: dict[str, str] = field(default_factory=dict)  # what qstat -f shows of Resource_List


def build(given: list[Given], script: str, script_name: str, arguments: list[str], ctx: Context,
          approximate: Callable[[str], None]) -> Submission:
    """`script`: the script's text; `script_name`: its path, or "-" for stdin."""
    try:
        return _build(given, script, script_name, arguments, ctx, approximate)
    except PbsValueError as error:
        raise PbsUsageError(f"qsub: {error}", EXIT_BAD_VALUE, usage=False) from None


def _build(given: list[Given], script: str, script_name: str, arguments: list[str], ctx: Context,
           approximate: Callable[[str], None]) -> Submission:
    o = {g.key: g for g in given}  # the last of each: the command line overrides the directives
    for g in given:
        if g.option.mark is Mark.REFUSED:
            raise BadRequest(f"{g.option.names[0]} is not supported by Drover: {g.option.note}")
        if g.option.mark is Mark.APPROXIMATED:
            approximate(f"{g.option.names[0]} {g.value or ''}: {g.option.note}".replace(" :", ":"))
    name = value(o, "N") or (os.path.basename(script_name) if script_name != "-" else "STDIN")
    if not name or "\n" in name:
        raise PbsValueError("illegal -N value")
    workdir = os.path.normpath(os.path.join(ctx.cwd, value(o, "d"))) if "d" in o else ctx.home
    job: JobRequest = {"script": "", "name": name, "workdir": workdir, "submit_dir": ctx.cwd, "hold": "h" in o}
    torque = "t" in o
    submission = Submission(job, interactive="I" in o, quiet="z" in o)
    if "J" in o and torque:
        raise PbsUsageError("qsub: -J and -t cannot be used together", usage=False)
    if "J" in o:
        first, last_index, step = array_range(value(o, "J"))
        job["array"] = f"{first}-{last_index}:{step}"
    elif torque:
        indices, at_once = torque_array(value(o, "t"))
        job["array"] = indices + (f"%{at_once}" if at_once else "")
    submission.array = "array" in job
    _output(o, job, ctx, torque)
    _resources(every(given, "l"), job, submission.resources, approximate)
    if "p" in o:
        text = value(o, "p")
        if not text.lstrip("-").isdigit() or not text.isascii() or not -1024 <= int(text) <= 1023:
            raise PbsValueError("illegal -p value")
        job["priority"] = int(text)
        if job["priority"] == -1024:
            approximate("-p -1024: Drover's lowest priority is -1023; the job gets it")
            job["priority"] = LOWEST_PRIORITY
    if "r" in o:
        if value(o, "r") not in ("y", "n"):
            raise PbsValueError("illegal -r value")
        job["rerunnable"] = value(o, "r") == "y"
    queue = value(o, "q") if "q" in o else ""
    if queue:
        job["queue"] = drover_queue(queue)
    if "a" in o:
        job["begin_at"] = date_time(value(o, "a"), ctx.now)
    _mail(o, job, ctx.user)
    dependencies, submission.block = _attributes(every(given, "W"), approximate)
    if dependencies:
        job["dependencies"] = dependencies
    job["environment"] = environment(given, ctx, queue)
    shell = value(o, "S").split(",")[0].split("@")[0] if "S" in o else None
    if "F" in o:
        try:
            arguments = [*arguments, *shlex.split(value(o, "F"))]
        except ValueError:
            raise PbsValueError("illegal -F value") from None
    job["script"] = script_for_shell(script, arguments, shell)
    return submission


def value(o: dict[str, Given], key: str) -> str:
    return (o[key].value or "") if key in o else ""


def _output(o: dict[str, Given], job: JobRequest, ctx: Context, torque: bool) -> None:
    """-o, -e and -j as Drover's output patterns."""
    index = ("-%a" if torque else ".%a") if "array" in job else ""
    name = job["name"].replace("%", "%%")
    output = _path(o.get("o"), f"{name}.o%j{index}", ctx)
    error = _path(o.get("e"), f"{name}.e%j{index}", ctx)
    join = value(o, "j") if "j" in o else "n"
    if join not in ("oe", "eo", "n"):
        raise PbsValueError("illegal -j value")
    if join == "oe":
        job["output"], job["error"] = output, None
    elif join == "eo":
        job["output"], job["error"] = error, None
    else:
        job["output"], job["error"] = output, error


def _path(given: Given | None, default: str, ctx: Context) -> str:
    """A path as qsub takes it: `[host:]path`, relative to where qsub ran; a directory gets the
    default name in it. PBS Pro's ^array_index^ is the subjob's index."""
    if given is None or not given.value:
        return os.path.join(ctx.cwd.replace("%", "%%"), default)
    path = given.value
    host, colon, rest = path.partition(":")
    if colon and "/" not in host:
        path = rest
    full = os.path.join(ctx.cwd, path)
    if path.endswith("/") or ctx.is_dir(full):
        return os.path.join(full.replace("%", "%%"), default)
    return os.path.normpath(full).replace("%", "%%").replace("^array_index^", "%a")


def _resources(items: list[str], job: JobRequest, shown: dict[str, str],
               approximate: Callable[[str], None]) -> None:
    """-l's requests, each a comma-separated list of NAME=VALUE; a later one of a name wins."""
    requests: dict[str, str] = {}
    for item in items:
        for request in item.split(","):
            key, equals, text = request.partition("=")
            if not key or not equals:
                raise PbsValueError("illegal -l value")
            requests[key.strip()] = text.strip()
    shown.update(requests)
    chunks: list[Chunk] | None = None
    if "select" in requests:
        chunks = select(requests.pop("select"))
    if "nodes" in requests:
        if chunks is not None:
            raise PbsValueError("illegal -l value: select and nodes cannot be used together")
        chunks = nodes(requests.pop("nodes"))
    cpus = int(requests.pop("ncpus")) if requests.get("ncpus", "").isdigit() else None
    if "ncpus" in requests:
        raise PbsValueError(f"illegal -l value: ncpus={requests['ncpus']}")
    memory = size_mib(requests.pop("mem")) if "mem" in requests else None
    gpus = requests.pop("ngpus", None)
    if chunks is not None:
        _chunks(chunks, job, approximate)
        if memory is None:
            per_chunk = [c.mem_mib * c.count for c in chunks if c.mem_mib is not None]
            memory = sum(per_chunk) if per_chunk else None
        if gpus is None and any(c.ngpus for c in chunks):
            gpus = str(max(c.ngpus for c in chunks))
    elif cpus is not None:
        job["cpus"] = max(cpus, 1)
    if memory is not None:
        job["memory_mib"] = memory
    if gpus is not None and gpus != "0":
        if not gpus.isascii() or not gpus.isdigit():
            raise PbsValueError(f"illegal -l value: ngpus={gpus}")
        job["gres"] = [f"gpu:{gpus}"]
    if "walltime" in requests:
        job["time_limit_s"] = duration_s(requests.pop("walltime"))
    for key in ("cput", "pcput"):
        if key in requests:
            duration_s(requests.pop(key))
            approximate(f"-l {key}: Drover limits a job's time, not its CPU time; ignored")
    for key in ("pmem", "pvmem", "vmem"):
        if key in requests:
            size = size_mib(requests.pop(key))
            if "memory_mib" not in job:
                per_process = key != "vmem"
                job["memory_mib"] = size * (job.get("cpus", 1) if per_process else 1)
                approximate(f"-l {key}: read as the job's memory" + (" (per CPU)" if per_process else ""))
    place = requests.pop("place", None)
    if place is not None:
        if "excl" in place.split(":"):
            job["exclusive"] = True
        if set(place.split(":")) - {"excl", "exclhost", "shared", "free", "pack", "scatter", "vscatter"}:
            raise PbsValueError(f"illegal -l value: place={place}")
        if set(place.split(":")) & {"scatter", "vscatter", "exclhost"}:
            approximate(f"-l place={place}: a job's chunks are placed as its parallel environment spreads them")
    if "software" in requests:
        requests.pop("software")
        approximate("-l software: ignored")
    for key, text in requests.items():  # a licence, generic resource or node feature of the cluster's
        job.setdefault("resource_requests", {})[key] = text


def _chunks(chunks: list[Chunk], job: JobRequest, approximate: Callable[[str], None]) -> None:
    """The chunks of `select` or `nodes`: one chunk is the job's CPUs on one node; several, a
    job of the built-in parallel environment across nodes, the chunk's CPUs on each."""
    if len({(c.ncpus, c.ngpus) for c in chunks}) > 1:
        raise BadRequest("-l select/nodes: chunks of different sizes are not supported by Drover (a job on "
                         "several nodes holds the same CPUs on each)")
    count, ncpus = sum(c.count for c in chunks), chunks[0].ncpus
    for chunk in chunks:
        for key, text in chunk.other:
            if key == "host":
                approximate(f"-l nodes={text}: a job runs on the nodes the scheduler chooses")
            elif key == "property":
                job["constraint"] = "&".join(filter(None, [job.get("constraint"), text]))
            else:
                job.setdefault("resource_requests", {})[key] = text
    if count == 1:
        job["cpus"] = ncpus
        return
    if any(c.ngpus for c in chunks):
        raise BadRequest("-l select: GPUs on several nodes are not supported by Drover (a job that asks for "
                         "devices runs on one node)")
    job["cpus"], job["pe"], job["pe_slots"], job["pe_per_node"] = 1, ACROSS_NODES, str(count * ncpus), ncpus


def _mail(o: dict[str, Given], job: JobRequest, user: str) -> None:
    """-m: when mail goes (a abort, b begin, e end; n none); -M: to whom."""
    letters = set(value(o, "m")) if "m" in o else set()
    if letters - set("abejn") or ("n" in letters and len(letters) > 1):
        raise PbsValueError("illegal -m value")
    if not letters - {"n", "j"}:
        return
    job["mail_user"] = value(o, "M") if "M" in o else user
    job["mail_type"] = [kind for letter, kind in (("b", "BEGIN"), ("e", "END"), ("a", "FAIL")) if letter in letters]


def _attributes(items: list[str], approximate: Callable[[str], None]) -> tuple[list[DependencyRequest], bool]:
    """-W's attributes: the dependencies, and whether qsub blocks."""
    dependencies: list[DependencyRequest] = []
    block = False
    for item in items:
        key, equals, text = item.partition("=")
        if not equals:
            raise PbsValueError("illegal -W value")
        if key == "depend":
            dependencies += [{"kind": d.kind, "job": d.job, "task": d.task} for d in depend(text)]
        elif key == "block":
            if text.lower() not in ("true", "false", "t", "f", "y", "n", "1", "0"):
                raise PbsValueError("illegal -W value")
            block = text.lower() in ("true", "t", "y", "1")
        elif key in ("umask", "group_list", "sandbox", "run_count", "release_nodes_on_stageout", "tolerate_node_failures"):
            approximate(f"-W {key}: ignored")
        elif key in ("stagein", "stageout"):
            raise BadRequest(f"-W {key}: file staging is not supported by Drover (the job's nodes share its files)")
        else:
            raise PbsValueError(f"illegal -W value: {key}")
    return dependencies, block


def environment(given: list[Given], ctx: Context, queue: str) -> dict[str, str]:
    """-V: all of qsub's environment; -v NAME[=VALUE],...; and the PBS_O_* qsub always sends
    (qsub(1B)), which also mark the job as PBS's, for the PBS variables it gets when it runs."""
    env = dict(ctx.environ) if any(g.key == "V" for g in given) else {
        "PATH": ctx.environ.get("PATH", "/usr/local/bin:/bin:/usr/bin")}
    for item in every(given, "v"):
        for pair in _variables(item):
            key, sep, text = pair.partition("=")
            if sep:
                env[key] = text
            elif key in ctx.environ:
                env[key] = ctx.environ[key]
    if ctx.environ.get("PBS_SERVER"):
        env["PBS_SERVER"] = ctx.environ["PBS_SERVER"]
    for name in ("HOME", "LANG", "LOGNAME", "PATH", "MAIL", "SHELL", "TZ"):
        if name in ctx.environ:
            env[f"PBS_O_{name}"] = ctx.environ[name]
    env["PBS_O_LOGNAME"] = ctx.environ.get("LOGNAME", ctx.user)
    env["PBS_O_HOME"] = ctx.home
    env["PBS_O_HOST"] = ctx.host
    env["PBS_O_WORKDIR"] = ctx.cwd
    env["PBS_O_SYSTEM"] = os.uname().sysname
    env["PBS_O_QUEUE"] = queue or "workq"
    return env


def _variables(text: str) -> list[str]:
    """-v's comma-separated list; a value in quotes may hold commas."""
    out, current, quote = [], "", ""
    for char in text:
        if quote:
            if char == quote:
                quote = ""
            else:
                current += char
        elif char in "\"'":
            quote = char
        elif char == ",":
            out.append(current)
            current = ""
        else:
            current += char
    out.append(current)
    return [item for item in out if item]
