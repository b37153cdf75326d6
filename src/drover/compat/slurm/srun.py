"""srun: inside a job (SLURM_JOB_ID is set), a job step of N tasks on the job's node (step.py),
or over the job's hosts when its allocation spans several (step_hosts.py, step_remote.py);
outside one, an allocation of its own (on several nodes with -N, as sbatch's: submission.py), a
Drover job whose script runs the same srun inside it, its output streamed here, as srun without
an allocation does (and `--pty`: a terminal, through `drover run --pty`). Options as srun reads
them: its SLURM_*/SRUN_* input variables first (in a job, those are the job's own: SLURM_NTASKS
makes the step's default task count), then the command line. The exit status is the step's:
its tasks' highest exit code, 128 + the signal of one killed; 255 for an option srun refuses
while reading its options; 1 for other errors."""

from __future__ import annotations

import os
import pwd
import shlex
import socket
import sys
from collections.abc import Mapping, Sequence

from drover.compat.slurm import submit_options
from drover.compat.slurm.common import VERSION
from drover.compat.slurm.job_facts import step_inherits
from drover.compat.slurm.node_count import nodes_for_tasks
from drover.compat.slurm.reporting import reporting_errors
from drover.compat.slurm.request import Refused, Request, apply_marks, parse
from drover.compat.slurm.step import Step, next_step_id, run
from drover.compat.slurm.step_hosts import Layout, allocation, distribution, lay_out, node_range
from drover.compat.slurm.submission import (
    add_node_requests,
    requested_cpus_per_task,
    shape,
    to_job,
)
from drover.protocol.plain import JobRequest

OPTIONS = submit_options.options_for("srun")
# Set in the environment of the job srun makes outside an allocation: the srun inside it has
# had its options checked (and warned about) already.
CHECKED = "DROVER_SRUN_OPTIONS_CHECKED"


def main(argv: Sequence[str] | None = None) -> int:
    return reporting_errors("srun", lambda: _main(list(sys.argv[1:] if argv is None else argv)))


def _main(argv: list[str]) -> int:
    found, command = parse("srun", argv)
    job_id = os.environ.get("SLURM_JOB_ID")
    if job_id is not None:
        # A step's variables come from its job, not from what its caller left of them.
        os.environ.update(step_inherits(os.environ, job_id))
    request = Request("srun")
    request.add_environment(os.environ)
    request.add(found, "the command line")
    if request.has("help") or request.has("usage"):
        print("Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]] [ : [OPTIONS(N)...]] executable(N) [args(N)...]")
        return 0
    if request.has("version"):
        print(VERSION)
        return 0
    if os.environ.get(CHECKED) != "1":
        apply_marks(request, request.has("strict") or os.environ.get("DROVER_COMPAT_STRICT") == "1")
    if not command and not request.has("pty"):
        print("srun: fatal: No command given to execute.", file=sys.stderr)
        return 1
    if job_id is None:
        if request.has("jobid"):
            raise Refused(f"--jobid={request.value('jobid')}: a step cannot join a job from outside it on Drover")
        return allocate_and_run(request, argv, command)
    if request.value("jobid") not in (None, job_id):
        raise Refused(f"--jobid={request.value('jobid')}: a step runs only in the job it is started from "
                      f"(here {job_id})")
    return run_step(request, command, job_id)


def run_step(request: Request, command: list[str], job_id: str) -> int:
    """A step in the job srun runs in."""
    allocated = allocation(os.environ)
    layout = _layout(request, job_id, allocated) if len(allocated) > 1 else None
    asked = nodes_for_tasks(request, request.integer("ntasks", minimum=1))
    if layout is None and asked > 1:
        raise Refused(f"Only allocated 1 nodes asked for {asked}")
    ntasks = layout.ntasks if layout is not None else request.integer("ntasks", minimum=1) or 1
    if request.value("relative") not in (None, "0"):
        raise Refused(f"--relative={request.value('relative')}: a step starts on the job's first node, relative 0")
    # -c, or --tres-per-task=cpu=N
    cpus_per_task = shape(request).cpus_per_task if layout is None else requested_cpus_per_task(request)
    environ = dict(os.environ)
    # srun's own log level, in its environment (so --export=NONE drops it, as srun's does).
    environ.setdefault("SRUN_DEBUG", str(3 + request.verbose - (1 if request.has("quiet") else 0)))
    env = step_environment(request.value("export"), environ, job_id)
    step_id = next_step_id(job_id, os.environ.get("TMPDIR", "/tmp"))
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    nodes, nodelist, tasks_per_node, here = "1", node, str(ntasks), list(range(ntasks))
    if layout is not None:
        nodes, nodelist, tasks_per_node = str(len(layout.nodes)), layout.nodelist, layout.tasks_per_node
        here = layout.nodes[0].ranks
    env.update({
        "SLURM_STEP_ID": str(step_id), "SLURM_STEPID": str(step_id),
        "SLURM_STEP_NUM_TASKS": str(ntasks), "SLURM_STEP_NUM_NODES": nodes, "SLURM_STEP_NODELIST": nodelist,
        "SLURM_STEP_TASKS_PER_NODE": tasks_per_node, "SLURM_GTIDS": ",".join(str(task) for task in here),
        "SLURM_LAUNCH_NODE_IPADDR": "127.0.0.1", "SLURM_SRUN_COMM_HOST": "127.0.0.1",
        "SLURM_UMASK": f"{_umask():04o}",
    })
    if not request.has("preserve-env"):
        env.update({"SLURM_NTASKS": str(ntasks), "SLURM_NPROCS": str(ntasks), "SLURM_TASKS_PER_NODE": tasks_per_node,
                    "SLURM_NNODES": nodes})
    if cpus_per_task is not None:
        env["SLURM_CPUS_PER_TASK"] = str(cpus_per_task)
        env["SLURM_TRES_PER_TASK"] = f"cpu={cpus_per_task}"  # as srun sets it for -c
    env.update(_from_the_step(request, environ))
    kill = request.value("kill-on-bad-exit")
    step = Step(
        argv=command, ntasks=ntasks, environment=env, output=request.value("output"), error=request.value("error"),
        input=request.value("input"), open_mode=request.value("open-mode") or "truncate",
        label=request.has("label"), kill_on_bad_exit=request.has("kill-on-bad-exit") and kill != "0",
        wait_s=request.integer("wait"), cwd=request.value("chdir"), step_id=step_id, node=node,
        nodes=layout.nodes if layout is not None and len(layout.nodes) > 1 else [],
    )
    if not step.nodes:
        return run(step)
    return _run_across_hosts(step, int(job_id))


def _layout(request: Request, job_id: str, allocated: list[tuple[str, int]]) -> Layout:
    """The step's tasks over the job's hosts: -n (else SLURM_NTASKS, the job's slots), -N,
    --ntasks-per-node and -c, as srun takes them; its warnings printed."""
    nodes = request.value("nodes")
    per_node = request.integer("ntasks-per-node", minimum=1) or request.integer("tasks-per-node", minimum=1)
    node_count = node_range(nodes) if nodes is not None else None
    ntasks = request.integer("ntasks", minimum=1)
    given = request.given.get("ntasks")
    if per_node is not None and (given is None or given.from_environment):
        # --ntasks-per-node without -n: that many on each of the step's nodes
        ntasks = per_node * min(node_count[0] if node_count else len(allocated), len(allocated))
    how, unknown = distribution(request.value("distribution"))
    layout = lay_out(job_id, allocated, ntasks or 1, node_count, per_node, requested_cpus_per_task(request) or 1, how)
    for warning in [*([unknown] if unknown else []), *layout.warnings]:
        print(f"srun: Warning: {warning}", file=sys.stderr)
    return layout


def _run_across_hosts(step: Step, job_id: int) -> int:
    """The step, its tasks on the other hosts started as tasks of the job there."""
    from drover.cli.commands.task import own_job
    from drover.cli.common import client
    from drover.compat.slurm.step_remote import RemoteTasks

    _, index = own_job()
    with client(timeout_s=None) as api:
        step.elsewhere = RemoteTasks(api, job_id, index)
        return run(step)


def _from_the_step(request: Request, environ: Mapping[str, str]) -> dict[str, str]:
    """What slurmstepd sets in every task's environment from the job and srun's options
    (src/common/env.c setup_env), whatever srun's own environment holds: the job's name and
    CPUs on the node, its user, the distribution, srun's nice value, the CPU binding asked for."""
    entry = pwd.getpwuid(os.getuid())
    out = {
        "SLURM_JOB_UID": str(entry.pw_uid), "SLURM_JOB_USER": entry.pw_name, "SLURM_JOB_GID": str(os.getgid()),
        "SLURM_DISTRIBUTION": (request.value("distribution") or "block").split(",")[0],
        "SLURM_PRIO_PROCESS": str(os.getpriority(os.PRIO_PROCESS, 0)),
    }
    for name in ("SLURM_JOB_NAME", "SLURM_CPUS_ON_NODE"):
        if name in environ:
            out[name] = environ[name]
    bind = request.value("cpu-bind") or request.value("cpu_bind")
    if bind is not None:
        out.update(cpu_bind_variables(bind))
    return out


def cpu_bind_variables(bind: str) -> dict[str, str]:
    """--cpu-bind as env.c reports it: SLURM_CPU_BIND_VERBOSE (quiet unless v[erbose]),
    SLURM_CPU_BIND_TYPE (the binding: "cores", "map_cpu:"...), SLURM_CPU_BIND_LIST (a map's or
    mask's list), and SLURM_CPU_BIND, all of them in one ("quiet,map_cpu:0,1")."""
    verbose = "quiet"
    kind = listed = ""
    for word in bind.split(","):
        name, colon, values = word.partition(":")
        if name.lower() in ("v", "verbose"):
            verbose = "verbose"
        elif name.lower() in ("q", "quiet"):
            verbose = "quiet"
        elif colon:
            kind, listed = f"{name.lower()}:", values
        elif word:
            kind = word.lower()
    together = verbose + (f",{kind}{listed}" if kind else "")
    return {"SLURM_CPU_BIND_VERBOSE": verbose, "SLURM_CPU_BIND_TYPE": kind, "SLURM_CPU_BIND_LIST": listed,
            "SLURM_CPU_BIND": together}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def step_environment(export: str | None, environ: Mapping[str, str], job_id: str) -> dict[str, str]:
    """The tasks' environment under srun's --export, built as srun builds it: the words before
    a NONE, NAME=VALUE as given and NAME with srun's own value; then, with ALL (or no --export),
    all of srun's environment over them, so that its values win over the ones given, as srun(1)
    says; else only its SLURM* variables. NONE allows no variables after it."""
    env: dict[str, str] = {}
    everything = export is None
    for word in (export or "").split(","):
        if word.upper() == "NONE":
            break
        if word.upper() == "ALL":
            everything = True
            continue
        name, equals, value = word.partition("=")
        if equals:
            env[name] = value
        elif word in environ:
            env[word] = environ[word]
    if everything:
        env.update(environ)
    else:
        env.update({name: value for name, value in environ.items() if name.startswith(_ALWAYS_PASSED)})
    env["SLURM_JOB_ID"] = env["SLURM_JOBID"] = job_id
    env.pop(CHECKED, None)
    return env


# What a step always gets of srun's environment, whatever --export says.
_ALWAYS_PASSED = ("SLURM", "_SLURM_SPANK_OPTION_")


def allocate_and_run(request: Request, argv: list[str], command: list[str]) -> int:
    """srun outside a job: a job holding ntasks × cpus-per-task CPUs whose script is this srun,
    which then runs the step inside it; the job's output streams here."""
    if request.has("pty"):
        return _on_terminal(request, command)
    from drover.compat.slurm.allocation import stream_job

    shape(request)  # refuse a bad shape before anything is submitted
    srun = [sys.executable, "-m", "drover.compat.slurm.srun", *argv]
    script = "#!/bin/bash\nexec " + " ".join(shlex.quote(word) for word in srun) + "\n"
    job = to_job(request, script, os.path.basename(command[0]))
    job["environment"][CHECKED] = "1"
    return stream_job("srun", job, quiet=request.has("quiet"))


def _on_terminal(request: Request, command: list[str]) -> int:
    from drover.cli.main import main as drover

    job_shape = shape(request)
    if job_shape.nodes > 1:
        raise Refused(f"--pty with --nodes={request.value('nodes')}: a terminal is given to a job on one node")
    options = [f"--cpus={job_shape.cpus}", *(["--quiet"] if request.has("quiet") else [])]
    for key, option in (("job-name", "--name"), ("time", "--time"), ("mem", "--mem"), ("partition", "--queue"),
                        ("chdir", "--workdir")):
        value = request.value(key)
        if value is not None:
            options.append(f"{option}={value}")
    wanted: JobRequest = {"script": "", "workdir": ""}
    add_node_requests(request, job_shape, wanted)
    options += [f"--gres={gres}" for gres in wanted.get("gres", [])]
    if wanted.get("constraint"):
        options.append(f"--constraint={wanted['constraint']}")
    if wanted.get("exclusive"):
        options.append("--exclusive")
    if wanted.get("licenses"):
        from drover.core.licenses import describe_licenses

        options.append(f"--licenses={describe_licenses(wanted['licenses'])}")
    return drover(["run", "--pty", *options, "--", *(command or [os.environ.get("SHELL", "/bin/sh")])])


if __name__ == "__main__":
    raise SystemExit(main())
