"""sbatch's and salloc's options made into a Drover job: the shape of the allocation (one node:
ntasks × cpus-per-task CPUs; several, with -N: a job of the parallel environment `slurm`, its
CPUs on each node fixed, node_count.py), memory, time, names, files, and the SLURM_* variables
that describe the request to the job (and to srun inside it). Pure but for reading the
submitter's environment and --export-file."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

from drover.compat.slurm.node_count import (
    PARALLEL_ENVIRONMENT,
    AcrossNodes,
    across_nodes,
    nodes_for_tasks,
    warn_of_nodes,
)
from drover.compat.slurm.request import OptionError, Refused, Request, warn
from drover.core.begin_time import parse_begin
from drover.core.dependencies import Dependencies, kill_on_invalid, parse_dependencies
from drover.core.errors import BadRequest, DroverError
from drover.protocol.plain import JobRequest


@dataclass(frozen=True)
class Shape:
    """What the job asks of its one node, or of each of its nodes."""

    ntasks: int | None  # None: not asked for (SLURM_NTASKS is then not set, as on Slurm)
    cpus_per_task: int | None
    cpus: int  # what the job gets: ntasks × cpus-per-task, at least --mincpus; on several nodes, all of them
    across: AcrossNodes | None = None  # a job on several nodes (-N above 1)

    @property
    def nodes(self) -> int:
        return self.across.nodes if self.across is not None else 1


def shape(request: Request) -> Shape:
    ntasks = request.integer("ntasks", minimum=1)
    per_node = request.integer("ntasks-per-node", minimum=1) or request.integer("tasks-per-node", minimum=1)
    nodes = nodes_for_tasks(request, ntasks)
    if nodes > 1:
        cpus_per_task = requested_cpus_per_task(request)
        across = across_nodes(request, nodes, ntasks, per_node, cpus_per_task or 1)
        return Shape(across.ntasks, cpus_per_task, across.slots, across)
    if ntasks is None and per_node is not None:
        ntasks = per_node  # one node: as many tasks as the node is to run
    cpus_per_task = requested_cpus_per_task(request)
    cpus = (ntasks or 1) * (cpus_per_task or 1)
    mincpus = request.integer("mincpus", minimum=1)
    if mincpus is not None:
        cpus = max(cpus, mincpus)
    return Shape(ntasks, cpus_per_task, cpus)


def requested_cpus_per_task(request: Request) -> int | None:
    """-c N, or --tres-per-task=cpu=N."""
    cpus_per_task = request.integer("cpus-per-task", minimum=1)
    tres = request.value("tres-per-task")
    if tres is not None:
        match = re.fullmatch(r"(?:cpu)[:=]([0-9]+)", tres.strip().lower())
        if not match:
            raise Refused(f"--tres-per-task={tres}: Drover schedules CPUs only (cpu=N)")
        cpus_per_task = int(match.group(1))
    return cpus_per_task


def memory_mib(request: Request, cpus: int, nodes: int = 1) -> int | None:
    """The job's memory in all: --mem on each node, or --mem-per-cpu for each CPU."""
    from drover.core.units import parse_memory_mib

    for key, factor in (("mem", nodes), ("mem-per-cpu", cpus)):
        text = request.value(key)
        if text is not None:
            try:
                return parse_memory_mib(text) * factor
            except DroverError:
                raise OptionError(f"invalid memory constraint: {text}") from None
    return None


def time_limit_s(request: Request) -> int | None:
    from drover.core.units import parse_duration_s

    text = request.value("time")
    if text is None or text.strip().upper() in ("UNLIMITED", "INFINITE", "-1"):
        return None
    try:
        return parse_duration_s(text)
    except DroverError:
        raise OptionError("Invalid time limit specification") from None


# Slurm's filename patterns (expand_stdio_fields in src/common/print_fields.c) in Drover's: %A %j
# %a %x %u %N %% carry over; for the batch step %J is the job id and %s is "batch"; %t (task),
# %n (node) and %r (restarts) are 0 when the job starts; an unknown letter stays as it is.
_PATTERN = re.compile(r"%(\d*)(.?)", re.S)


def pattern(text: str, command: str) -> str:
    if "\\" in text:  # a backslash anywhere means: no replacement at all
        return text.replace("\\", "").replace("%", "%%")

    def one(match: re.Match[str]) -> str:
        width, letter = match.group(1), match.group(2)
        padding = min(int(width or 0), 10)
        if letter in "tnr" and letter:
            if letter == "r":
                warn(command, f"{text}: %r is 0 here, whatever the job's restarts")
            return "0" * max(padding, 1)
        if letter and letter in "Aaj" and padding > 1:
            warn(command, f"{text}: %{width}{letter} is written without its zero padding")
        if letter == "b":
            raise Refused(f"{text}: %b (the array index modulo 10) is not supported by Drover")
        known = {"A": "%A", "a": "%a", "j": "%j", "J": "%j", "s": "batch", "x": "%x", "u": "%u", "N": "%N",
                 "%": "%%"}
        return known.get(letter, "%%" + letter)

    return _PATTERN.sub(one, text)


def dependencies(text: str) -> Dependencies:
    """--dependency: every kind of sbatch(1)'s (core/dependencies.py), `,` or `?` between them."""
    try:
        return parse_dependencies(text)
    except BadRequest as error:
        raise OptionError(f"Invalid dependency specification: {text}: {error}") from None


# The SLURM_* variables that describe a job or a step: the submitter's own (it may be a job
# itself) are never passed on, since they describe another job.
JOB_VARIABLES = re.compile(
    r"SLURM_(JOB_\w+|JOBID|ARRAY_\w+|STEP\w*|NTASKS\w*|NPROCS|CPUS_\w+|TASKS_PER_NODE|NNODES|NODELIST|"
    r"NODEID|PROCID|LOCALID|GTIDS|TASK_PID|MEM_PER_\w+|SUBMIT_\w+|CLUSTER_NAME|TOPOLOGY_ADDR\w*|PRIO_PROCESS|"
    r"UMASK|DISTRIBUTION|SRUN_COMM_\w+|LAUNCH_NODE_IPADDR|EXPORT_ENV|HET_\w+|RESTART_COUNT|TRES_\w+|"
    r"OOM_KILL_STEP|DIST_PLANESIZE|THREADS_PER_CORE|OVERCOMMIT|SPANK_\w+)|SLURMD_NODENAME"
)


def export(request: Request, key: str = "export", environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """--export: ALL (the default), NONE or NIL (nothing of the submitter's), or
    `[ALL,]NAME[=VALUE],...`; with --export-file, that file's variables first."""
    environ = os.environ if environ is None else environ
    env: dict[str, str] = {}
    file = request.value("export-file")
    if file is not None:
        env.update(_export_file(file))
    text = request.value(key, "ALL") or "ALL"
    words = [word for word in text.split(",") if word]
    if not words:
        raise OptionError(f"Invalid --export specification: {text!r}")
    for word in words:
        if word.upper() == "ALL":
            env.update(environ)
        elif word.upper() in ("NONE", "NIL"):
            continue
        elif "=" in word:
            name, _, value = word.partition("=")
            env[name] = value
        elif word in environ:
            env[word] = environ[word]
    return {name: value for name, value in env.items() if not JOB_VARIABLES.fullmatch(name)}


def _export_file(path: str) -> dict[str, str]:
    """A file of NAME=VALUE entries, separated by NUL bytes (env -0) or newlines; a number is a
    file descriptor, as sbatch allows."""
    try:
        if (path.isascii() and path.isdigit()):
            with os.fdopen(int(path), "rb", closefd=False) as stream:
                data = stream.read()
        else:
            with open(path, "rb") as stream:
                data = stream.read()
    except OSError as error:
        raise OptionError(f"--export-file={path}: {error.strerror}") from None
    separator = b"\0" if b"\0" in data else b"\n"
    env = {}
    for entry in data.split(separator):
        name, equals, value = entry.decode("utf-8", "surrogateescape").partition("=")
        if equals and name.strip():
            env[name.strip()] = value
    return env


def described(request: Request, job_shape: Shape, memory: int | None) -> dict[str, str]:
    """The SLURM_* variables the job's request sets in its environment (sbatch(1), OUTPUT
    ENVIRONMENT VARIABLES): a job that asked for tasks sees SLURM_NTASKS, one that asked for
    CPUs per task sees SLURM_CPUS_PER_TASK; srun inside the job reads them back."""
    env: dict[str, str] = {}
    if job_shape.ntasks is not None:
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(job_shape.ntasks)
        env["SLURM_TASKS_PER_NODE"] = str(job_shape.ntasks)  # on several nodes, the node's facts say it
    per_node = request.integer("ntasks-per-node", minimum=1) or request.integer("tasks-per-node", minimum=1)
    if per_node is not None:  # as asked on several nodes; on one, the tasks it runs
        env["SLURM_NTASKS_PER_NODE"] = str(per_node if job_shape.across is not None else job_shape.ntasks)
    if job_shape.cpus_per_task is not None:
        env["SLURM_CPUS_PER_TASK"] = str(job_shape.cpus_per_task)
    if memory is not None:
        per_cpu = request.value("mem-per-cpu") is not None and request.value("mem") is None
        env["SLURM_MEM_PER_CPU" if per_cpu else "SLURM_MEM_PER_NODE"] = str(
            memory // job_shape.cpus if per_cpu else memory // job_shape.nodes)
    for key, variable in (("account", "SLURM_JOB_ACCOUNT"), ("qos", "SLURM_JOB_QOS"),
                          ("reservation", "SLURM_JOB_RESERVATION")):
        value = request.value(key)
        if value is not None:
            env[variable] = value
    if request.has("export"):
        env["SLURM_EXPORT_ENV"] = request.value("export") or ""
    if request.value("dependency"):
        env["SLURM_JOB_DEPENDENCY"] = request.value("dependency") or ""
    if request.value("tres-per-task"):
        env["SLURM_TRES_PER_TASK"] = request.value("tres-per-task") or ""
    import socket

    env["SLURM_SUBMIT_HOST"] = socket.gethostname()
    return env


def to_job(request: Request, script: str, default_name: str, environ: Mapping[str, str] | None = None
           ) -> JobRequest:
    """The Drover job for sbatch's (or salloc's) request; its options' marks applied already."""
    environ = os.environ if environ is None else environ
    job_shape = shape(request)
    warn_of_nodes(request, request.integer("ntasks", minimum=1))
    memory = memory_mib(request, job_shape.cpus, job_shape.nodes)
    command = request.command
    workdir = os.path.abspath(request.value("chdir") or os.getcwd())
    if not os.path.isdir(workdir):
        raise Refused(f"chdir({workdir}): No such file or directory")
    is_array = request.value("array") is not None
    named = request.given.get("job-name")
    if named is not None and named.value == "" and not named.from_environment:
        # Slurm keeps an empty name as given (sbatch names a job only when -J is missing); a
        # Drover job has a name of one non-empty line, so an empty -J is refused, never replaced.
        # (An empty SBATCH_JOB_NAME, as tools leave variables, names nothing.)
        raise Refused("-J/--job-name: an empty job name is not supported by Drover (leave -J out for the "
                      "default name)")
    job: JobRequest = {
        "script": script,
        "name": request.value("job-name") or default_name,
        "workdir": workdir,
        "submit_dir": os.getcwd(),
        "cpus": job_shape.cpus,
        "hold": request.has("hold"),
    }
    if job_shape.across is not None:  # its CPUs are the slots of its parallel environment
        job["cpus"], job["pe"], job["pe_slots"] = 1, PARALLEL_ENVIRONMENT, str(job_shape.cpus)
        job["pe_per_node"] = job_shape.across.per_node
    if command == "sbatch":
        output = request.value("output")
        job["output"] = pattern(output, command) if output else ("slurm-%A_%a.out" if is_array else "slurm-%j.out")
        error = request.value("error")
        if error:
            job["error"] = pattern(error, command)
        open_mode = request.value("open-mode")
        if open_mode is not None:
            if open_mode not in ("append", "truncate"):
                raise OptionError(f"Invalid --open-mode argument: {open_mode}. Ignored")
            job["open_mode"] = open_mode
    if memory is not None:
        job["memory_mib"] = memory
    limit = time_limit_s(request)
    if limit is not None:
        job["time_limit_s"] = limit
    if is_array:
        job["array"] = request.value("array")
    dependency = request.value("dependency")
    if dependency:
        from drover.cli.commands.submit import add_dependencies

        add_dependencies(job, dependencies(dependency))
    kill = request.value("kill-on-invalid-dep")
    begin = request.value("begin")
    try:
        if kill:
            job["kill_on_invalid_dep"] = kill_on_invalid(kill)
        if begin:
            job["begin_at"] = parse_begin(begin, time.time())
    except BadRequest as error:
        raise OptionError(str(error)) from None
    partition = request.value("partition")
    if partition:
        job["queue"] = partition.split(",")[0]
    priority = _priority(request)
    if priority is not None:
        job["priority"] = priority
    signal = request.value("signal")
    if signal:
        from drover.cli.commands.submit import warning_signal

        # Checked either way; sent only before a time limit. A job without one never reaches its
        # end time, so, as on a Slurm partition with no limit, the signal is never due.
        warn_signal, warn_before_s = warning_signal(re.sub(r"^[RB]+:", "", signal))
        if limit is not None:
            job["warn_signal"], job["warn_before_s"] = warn_signal, warn_before_s
    mail_user, mail_type = request.value("mail-user"), request.value("mail-type")
    if mail_type is not None and mail_type.upper() != "NONE":
        from drover.mail import parse_mail_types

        job["mail_user"] = mail_user or environ.get("USER", "")
        job["mail_type"] = parse_mail_types(mail_type)
    add_node_requests(request, job_shape, job)
    if request.has("no-requeue"):
        job["rerunnable"] = False
    elif request.has("requeue"):
        job["rerunnable"] = True
    env = export(request, environ=environ)
    env.update(described(request, job_shape, memory))
    job["environment"] = env
    if comment := request.value("comment"):
        job["comment"] = comment
    return job


def add_node_requests(request: Request, job_shape: Shape, job: JobRequest) -> None:
    """What the job needs of its node and of the cluster besides CPUs and memory: generic
    resources (--gres, --gpus...), node features (-C), the whole node (--exclusive), licences (-L)."""
    gres = generic_resources(request, job_shape.ntasks or 1)
    if gres:
        job["gres"] = [gres]
    constraint = (request.value("constraint") or "").strip()
    if constraint:
        job["constraint"] = constraint
    if request.has("exclusive"):
        value = (request.value("exclusive") or "").strip().lower()
        if value not in ("", "exclusive", "oversubscribe", "user", "mcs", "topo"):
            raise OptionError("Invalid --exclusive specification")
        if value in ("", "exclusive"):
            job["exclusive"] = True
    licenses = request.value("licenses")
    if licenses is not None:
        from drover.core.licenses import parse_licenses

        try:
            job["licenses"] = parse_licenses(licenses)
        except ValueError as error:
            raise OptionError(f"Invalid license specification: {error}") from None


# The GPU options, and what each count is multiplied by on the job's one node.
_GPU_OPTIONS = ("gpus", "gpus-per-node", "gpus-per-task")


def generic_resources(request: Request, ntasks: int) -> str:
    """--gres, and the GPUs of --gpus, --gpus-per-node and --gpus-per-task (× the tasks), as one
    canonical request ("gpu:a100:2,nic:1"); "" for none. GPU options that disagree are refused,
    as Slurm refuses them."""
    from drover.core.gres import GresNeed, describe, parse_gpus, parse_request

    try:
        text = request.value("gres")
        needs = list(parse_request(text, option="--gres")) if text is not None else []
        gpus: tuple[GresNeed, ...] | None = None
        named = ""
        for key in _GPU_OPTIONS:
            value = request.value(key)
            if value is None:
                continue
            factor = ntasks if key == "gpus-per-task" else 1
            asked = tuple(GresNeed(need.name, need.type, need.count * factor)
                          for need in parse_gpus(value, option="--" + key))
            if gpus is not None and asked != gpus:
                raise OptionError(f"{request.spelled(key)} and {named} ask for different GPUs")
            gpus, named = asked, request.spelled(key)
        if gpus is not None:
            given = tuple(need for need in needs if need.name == "gpu")
            if given and given != gpus:
                raise OptionError(f"--gres={text} and {named} ask for different GPUs")
            needs = [need for need in needs if need.name != "gpu"] + list(gpus)
        canonical = describe(needs)
        if canonical:
            parse_request(canonical, option="the GPUs asked for")  # the multiplied counts within bounds
        return canonical
    except ValueError as error:
        raise OptionError(f"Invalid generic resource (gres) specification: {error}") from None


MAX_NICE = 2**31 - 3


def _priority(request: Request) -> int | None:
    if request.value("priority") is not None:
        if (request.value("priority") or "").upper() == "TOP":
            return 1023
        number = request.integer("priority")
        return None if number is None else min(number, 1023)
    if request.has("nice"):
        nice_text = request.value("nice")
        try:
            nice = 100 if nice_text is None else int(nice_text)
        except ValueError:
            raise OptionError(f"Invalid nice value: {nice_text}") from None
        if abs(nice) > MAX_NICE:  # slurm_opt.c arg_set_nice: NICE_OFFSET - 3
            raise OptionError(f"Invalid --nice value, out of range (+/- {MAX_NICE})")
        return max(min(-nice, 1023), -1023)
    return None
