"""The job's environment: what it asked for, plus the facts of its attempt under Drover's names
and under the Grid Engine and Slurm names existing scripts read. And the site's: what the node's
own scripts get, with nothing of the job's. Pure."""

from __future__ import annotations

import os
import pwd
import re
import time

from drover.records import JOB_VARIABLES, IdentityRecord, JobRecord
from drover.shepherd.config import ShepherdConfig
from drover.shepherd.lsf_environment import lsf_facts
from drover.shepherd.pbs_environment import pbs_facts
from drover.slurm_layout import compress_counts, compress_hosts, tasks_per_node
from drover.spool.architecture import architecture

# The site's scripts (node and queue prolog and epilog, PE start and stop) run with this PATH and
# the attempt's facts, never with the job's environment: the job chose its LD_PRELOAD, BASH_ENV,
# ENV, PATH, PYTHON*, IFS and exported bash functions, and any of them would change how a site
# script loads or runs.
SITE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def site_environment(config: ShepherdConfig) -> dict[str, str]:
    """The environment of the site's methods: PATH, the attempt's facts (DROVER_*, and the Grid
    Engine and Slurm names: job id, name, owner, node, CPUs, working and submit directories,
    array indices), and HOME, USER, LOGNAME and SHELL of whom the method runs as (the node
    daemon's user). LANG=C. Nothing else."""
    # Nothing derived from the job's own environment (its SGE_O_* and Slurm request), and not
    # its TMPDIR, which is the owner's directory: not for root's scripts.
    facts = _facts(config, tmpdir="", submitted={})
    for name in ("TMPDIR", "TMP", "PE_HOSTFILE"):
        facts.pop(name, None)
    me = pwd.getpwuid(os.geteuid())
    env = {"PATH": SITE_PATH, "LANG": "C", "HOME": me.pw_dir, "USER": me.pw_name, "LOGNAME": me.pw_name,
           "SHELL": "/bin/sh", "DROVER_JOB_OWNER": config.owner, "DROVER_WORKDIR": config.workdir}
    env.update(facts)
    return env


def build_environment(config: ShepherdConfig, tmpdir: str) -> dict[str, str]:
    """What the job asked for, then the attempt's facts over it. SLURM_* variables that describe
    another job (the submitter was itself a job) are dropped: they would mislead srun."""
    env = dict(config.environment)
    # A task started on a host of its job keeps its caller's variables of that same job.
    same_job = bool(config.pe_task) and env.get("SLURM_JOB_ID", str(config.job_id)) == str(config.job_id)
    if _inherited_from_another_job(env) and not same_job:
        env = {name: value for name, value in env.items() if not _OTHER_JOBS_VARIABLE.fullmatch(name)}
    if config.pe_task:
        _facts_of_this_host(env, _facts(config, tmpdir, {}))
    else:
        env.update(_facts(config, tmpdir, config.environment))
        env.update(pbs_facts(config, tmpdir, config.environment))  # a job PBS's qsub submitted
        env.update(lsf_facts(config, tmpdir, config.environment))  # a job LSF's bsub submitted
    for name, value in _account(config.owner, config.identity).items():
        env.setdefault(name, value)  # as Grid Engine: from the passwd entry, where the job has none
    return env


# What describes the host a task of the job runs on, rather than the job: a task started on
# another host of the job gets these of its own host over its caller's.
_HOST_FACTS = frozenset({"DROVER_NODE", "DROVER_CPUS", "HOSTNAME", "TMPDIR", "TMP", "SGE_BINDING", "PE_HOSTFILE",
                         "SLURMD_NODENAME", "SLURM_CPUS_ON_NODE", "SLURM_TOPOLOGY_ADDR"})


def _facts_of_this_host(env: dict[str, str], facts: dict[str, str]) -> None:
    """A task of a running parallel job started on one of its hosts (`pe_task`): its caller ran
    inside the same job, on another of its hosts, so the job's facts in the caller's
    environment are true here too (its hosts and slots, which a task's own order does not hold)
    and so are those of a step srun started (SLURM_PROCID, SLURM_STEP_*); only what describes
    the host is this host's. What the caller lacked is filled in from this attempt's facts."""
    for name, value in facts.items():
        if name in _HOST_FACTS:
            env[name] = value
        else:
            env.setdefault(name, value)
    if "PE_HOSTFILE" not in facts:
        env.pop("PE_HOSTFILE", None)  # the master's file: not on this host


_own_account: dict[str, str] | None = None  # the fork server's user's, looked up once there


def remember_own_account() -> None:
    """Look up the node daemon's own user once, in the fork server, for every shepherd it forks:
    on a node whose daemon is not root, every job is that user's, and a lookup per attempt cost
    0.1-0.4 ms (more with a directory service). Like the execd's cache of owners, it is as fresh
    as the daemon: a changed HOME or SHELL is seen when the node daemon restarts."""
    global _own_account
    try:
        entry = pwd.getpwuid(os.getuid())
    except KeyError:
        return
    _own_account = _from_entry(entry.pw_name, entry.pw_dir, entry.pw_shell)


def _account(user: str, identity: IdentityRecord | None = None) -> dict[str, str]:
    """HOME, USER, LOGNAME and SHELL of the job's owner: from the execd's resolution of the
    owner when the job runs under a switch of identity (an NSS lookup costs about a
    millisecond, per attempt), or from the fork server's lookup of its own user, else from the
    password database."""
    if identity is not None and identity["user"] == user:
        return _from_entry(user, identity["home"], identity["shell"])
    if _own_account is not None and _own_account["USER"] == user:
        return _own_account
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return {}
    return _from_entry(user, entry.pw_dir, entry.pw_shell)


def _from_entry(user: str, home: str, shell: str) -> dict[str, str]:
    return {"HOME": home, "USER": user, "LOGNAME": user, "SHELL": shell or "/bin/sh"}


def pe_hostfile(config: ShepherdConfig) -> str | None:
    """Grid Engine's $PE_HOSTFILE for a job of a parallel environment, or of more than one CPU
    (the slots of an implicit one on its node): one line "host slots queue@host processors", as
    sge_pe(5) gives it; None for a serial job."""
    if config.cpus <= 1 and not config.job["pe"]:
        return None
    processors = ",".join(str(cpu) for cpu in config.cpu_ids) or "UNDEFINED"
    node, queue = config.node, config.job["queue"]
    lines = [f"{node} {config.cpus} {queue}@{node} {processors}\n"]
    for host in config.pe_hosts:  # a job on several hosts: one line each, the master first
        lines.append(f"{host['node']} {len(host['cpu_ids'])} {queue}@{host['node']} "
                     f"{','.join(str(cpu) for cpu in host['cpu_ids'])}\n")
    return "".join(lines)


PE_HOSTFILE_NAME = "pe_hostfile"  # in the attempt's TMPDIR

# A job's and a step's SLURM_* variables (sbatch(1) and srun(1), OUTPUT ENVIRONMENT VARIABLES).
_OTHER_JOBS_VARIABLE = re.compile(
    r"SLURM_(JOB_\w+|JOBID|ARRAY_\w+|STEP\w*|NTASKS\w*|NPROCS|CPUS_\w+|TASKS_PER_NODE|NNODES|NODELIST|"
    r"NODEID|PROCID|LOCALID|GTIDS|TASK_PID|MEM_PER_\w+|SUBMIT_\w+|CLUSTER_NAME|TOPOLOGY_ADDR\w*|PRIO_PROCESS|"
    r"DISTRIBUTION|SRUN_COMM_\w+|LAUNCH_NODE_IPADDR|EXPORT_ENV|HET_\w+|RESTART_COUNT|TRES_\w+|CPU_BIND\w*|"
    r"MEM_BIND\w*|OOMKILLSTEP|DIST_PLANESIZE|THREADS_PER_CORE|OVERCOMMIT|SHARDS_ON_NODE|GPUS\w*|UMASK)|"
    r"SLURMD_NODENAME"
)


def _inherited_from_another_job(env: dict[str, str]) -> bool:
    """sbatch passes on its job's request (SLURM_NTASKS, SLURM_CPUS_PER_TASK...) but never a job
    id; a submission whose environment holds SLURM_JOB_ID came from inside another job, and its
    SLURM_* variables are that job's."""
    return "SLURM_JOB_ID" in env or "SLURM_JOBID" in env


def _requested(env: dict[str, str], name: str, cpus: int) -> int | None:
    """A count sbatch passed on (SLURM_NTASKS, SLURM_CPUS_PER_TASK), if it is one that fits."""
    text = env.get(name, "")
    if not text.isdigit() or not 1 <= int(text) <= cpus:
        return None
    return int(text)


def _facts(config: ShepherdConfig, tmpdir: str, submitted: dict[str, str]) -> dict[str, str]:
    """The facts of the attempt, under Drover's, Grid Engine's and Slurm's names: for Grid
    Engine, submit(1)'s ENVIRONMENTAL VARIABLES; for Slurm, sbatch(1)'s OUTPUT ENVIRONMENT
    VARIABLES of a batch job on its node, or on all its nodes for a job of a parallel environment
    whose slots span several hosts (tests/data/manpages/ lists both, and which of them a Drover
    job gets)."""
    job_id, index = str(config.job_id), str(config.task_index)
    cpus, node, name = str(config.cpus), config.node, config.name
    # A job on several hosts: NSLOTS counts its slots on all of them, NHOSTS the hosts.
    hosts = str(1 + len(config.pe_hosts))
    slots = str(config.cpus if config.job["pe_slots"] is None else config.job["pe_slots"]) if config.pe_hosts else cpus
    request = {} if _inherited_from_another_job(submitted) else submitted
    restarted = "1" if config.attempt_number > 1 else "0"
    queue = config.job["queue"]
    stdout = config.stdout
    facts = {
        "DROVER_JOB_ID": job_id,
        "DROVER_TASK_ID": index,
        "DROVER_ATTEMPT": str(config.attempt_number),
        "DROVER_JOB_NAME": name,
        "DROVER_NODE": node,
        "DROVER_CPUS": cpus,
        "DROVER_SUBMIT_DIR": config.job["submit_dir"],
        "TMPDIR": tmpdir,
        "ENVIRONMENT": "BATCH",  # both Grid Engine and Slurm say so
        "HOSTNAME": node,
        # Grid Engine
        "JOB_ID": job_id,
        "JOB_NAME": name,
        "REQUEST": name,
        "QUEUE": queue,
        "NSLOTS": slots,
        "NHOSTS": hosts,
        "NQUEUES": hosts,  # one queue instance on each host
        "RESTARTED": restarted,
        "TMP": tmpdir,
        "ARC": architecture(),
        "SGE_ARCH": architecture(),
        "SGE_TASK_ID": index if config.is_array else "undefined",
        "SGE_TASK_FIRST": "undefined", "SGE_TASK_LAST": "undefined", "SGE_TASK_STEPSIZE": "undefined",
        "SGE_O_WORKDIR": config.job["submit_dir"],
        "SGE_CWD_PATH": config.workdir,
        "SGE_STDOUT_PATH": stdout,
        "SGE_STDERR_PATH": config.stderr or stdout,
        "SGE_STDIN_PATH": "/dev/null",
    }
    facts.update(_slurm_facts(config, request))
    for variable in ("SGE_O_HOME", "SGE_O_LOGNAME", "SGE_O_MAIL", "SGE_O_PATH", "SGE_O_SHELL", "SGE_O_TZ",
                     "SGE_O_TERM"):
        value = submitted.get(variable[len("SGE_O_"):])
        if value is not None:
            facts[variable] = value
    facts["SGE_O_HOST"] = submitted.get("SGE_O_HOST") or facts["SLURM_SUBMIT_HOST"]
    facts["SGE_O_LOGNAME"] = submitted.get("LOGNAME") or submitted.get("USER") or config.owner
    if config.job["time_limit_s"] is not None:
        facts["SLURM_JOB_END_TIME"] = str(int(facts["SLURM_JOB_START_TIME"]) + config.job["time_limit_s"])
    if config.memory_mib and "SLURM_MEM_PER_CPU" not in request:
        facts["SLURM_MEM_PER_NODE"] = str(config.memory_mib)
    if config.cpu_ids:
        facts["SGE_BINDING"] = " ".join(str(cpu) for cpu in config.cpu_ids)
    if config.cpus > 1 or config.job["pe"]:
        facts["PE_HOSTFILE"] = os.path.join(tmpdir, PE_HOSTFILE_NAME)
    if config.job["pe"]:  # submit(1): "PE: The parallel environment under which the job executes"
        facts["PE"] = config.job["pe"]
    facts.update(_gres_facts(config.gres))
    facts.update(_spec_variables(config.job))
    if config.is_array:
        facts.update(_array_facts(config))
    return facts


def _slurm_facts(config: ShepherdConfig, request: dict[str, str]) -> dict[str, str]:
    """sbatch(1)'s OUTPUT ENVIRONMENT VARIABLES of a batch job on its node, or on all its nodes
    for a job of a parallel environment whose slots span several hosts. `request`: what sbatch
    passed on of the job's request (SLURM_NTASKS, SLURM_CPUS_PER_TASK, SLURM_SUBMIT_HOST...)."""
    job_id, cpus, node, name = str(config.job_id), str(config.cpus), config.node, config.name
    queue = config.job["queue"]
    ntasks = _requested(request, "SLURM_NTASKS", config.cpus) or 1
    cpus_per_task = _requested(request, "SLURM_CPUS_PER_TASK", config.cpus) or max(config.cpus // ntasks, 1)
    nodelist, nodes, cpus_per_node, tasks_on_nodes = node, "1", cpus, str(ntasks)
    if config.pe_hosts:
        ntasks, cpus_per_task, nodelist, nodes, cpus_per_node, tasks_on_nodes = _across_hosts(config, request)
    return {
        "SLURM_JOB_ID": job_id,
        "SLURM_JOBID": job_id,
        "SLURM_JOB_NAME": name,
        "SLURM_JOB_PARTITION": queue,
        "SLURM_CLUSTER_NAME": "drover",  # as sacct, squeue, sinfo and scontrol name the cluster
        "SLURM_CPUS_PER_TASK": str(cpus_per_task),
        "SLURM_CPUS_ON_NODE": cpus,
        "SLURM_JOB_CPUS_PER_NODE": cpus_per_node,
        "SLURM_JOB_NODELIST": nodelist,
        "SLURM_NODELIST": nodelist,
        "SLURMD_NODENAME": node,
        "SLURM_TOPOLOGY_ADDR": node,
        "SLURM_TOPOLOGY_ADDR_PATTERN": "node",
        "SLURM_SUBMIT_DIR": config.job["submit_dir"],
        "SLURM_SUBMIT_HOST": request.get("SLURM_SUBMIT_HOST") or node,
        "SLURM_JOB_USER": config.owner,
        "SLURM_NTASKS": str(ntasks),
        "SLURM_NPROCS": str(ntasks),
        "SLURM_TASKS_PER_NODE": tasks_on_nodes,
        "SLURM_JOB_NUM_NODES": nodes,
        "SLURM_NNODES": nodes,
        "SLURM_NODEID": "0",
        "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0",
        "SLURM_GTIDS": "0",
        "SLURM_PRIO_PROCESS": "0",
        "SLURM_RESTART_COUNT": str(config.attempt_number - 1),
        "SLURM_JOB_START_TIME": str(int(time.time())),
    }


def _array_facts(config: ShepherdConfig) -> dict[str, str]:
    """An array task's indices, under Drover's, Grid Engine's and Slurm's names."""
    job_id, index = str(config.job_id), str(config.task_index)
    first, last, step, count = (
        str(config.array_first), str(config.array_last),
        str(config.array_step), str(config.array_count),
    )
    return {
        "DROVER_ARRAY_JOB_ID": job_id, "DROVER_ARRAY_TASK_ID": index,
        "DROVER_ARRAY_TASK_MIN": first, "DROVER_ARRAY_TASK_MAX": last,
        "DROVER_ARRAY_TASK_STEP": step, "DROVER_ARRAY_TASK_COUNT": count,
        "SGE_TASK_FIRST": first, "SGE_TASK_LAST": last, "SGE_TASK_STEPSIZE": step,
        "SLURM_ARRAY_JOB_ID": job_id, "SLURM_ARRAY_TASK_ID": index,
        "SLURM_ARRAY_TASK_MIN": first, "SLURM_ARRAY_TASK_MAX": last,
        "SLURM_ARRAY_TASK_STEP": step, "SLURM_ARRAY_TASK_COUNT": count,
    }


def _across_hosts(config: ShepherdConfig, request: dict[str, str]) -> tuple[int, int, str, str, str, str]:
    """The Slurm facts of a job whose slots span several hosts, as sbatch(1) gives those of a
    job on several nodes: its tasks (by default one per slot: a parallel job's slots are its
    tasks), the CPUs per task, the nodes in Slurm's hostlist form, master first, as the
    pe_hostfile lists them, their count, and the CPUs and tasks on each ("2(x3),1")."""
    names = [config.node, *(host["node"] for host in config.pe_hosts)]
    held = [config.cpus, *(len(host["cpu_ids"]) for host in config.pe_hosts)]
    slots = config.job["pe_slots"] or sum(held)
    ntasks = _requested(request, "SLURM_NTASKS", slots) or slots
    cpus_per_task = _requested(request, "SLURM_CPUS_PER_TASK", max(held)) or max(slots // ntasks, 1)
    tasks = tasks_per_node([count // cpus_per_task for count in held], ntasks)
    return (ntasks, cpus_per_task, compress_hosts(names), str(len(names)), compress_counts(held),
            compress_counts(tasks))


def _spec_variables(job: JobRecord) -> dict[str, str]:
    """The spec's fields marked with a variable (core/job_spec.py, records.JOB_VARIABLES) that
    the job set, each under its variable."""
    fields: dict[str, object] = dict(job)
    return {variable: _as_text(fields[name]) for name, variable in JOB_VARIABLES.items()
            if fields[name] not in (None, "", [], {}, False)}


def _as_text(value: object) -> str:
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return "1" if value is True else str(value)


# What selects the GPUs a process may use: NVIDIA's CUDA, AMD's ROCm runtime, and OpenCL's (as
# Slurm sets them); each is the job's GPUs' indices, or empty for none.
GPU_SELECTORS = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")


def _gres_facts(gres: dict[str, list[int]]) -> dict[str, str]:
    """The devices the attempt was given, as Slurm and Grid Engine say it: for GPUs, the CUDA and
    Grid Engine ordinals and Slurm's SLURM_JOB_GPUS; for every resource, Univa Grid Engine's
    SGE_HGR_<name> (RSMAP ids, space-separated); and all of them in DROVER_GRES,
    "gpu:0,2;nic:0"."""
    given = {name: sorted(indices) for name, indices in sorted(gres.items()) if indices}
    # A job given no GPU sees none: CUDA (and ROCm, and OpenCL through GPU_DEVICE_ORDINAL) would
    # otherwise use every GPU of the node, another job's too. An empty list is "no device" to
    # each; where the devices cgroup is writable, the node's GPUs are also denied to the job
    # (shepherd/containment/v1.py), as Slurm's ConstrainDevices does.
    facts = {name: "" for name in GPU_SELECTORS}
    if not given:
        return facts
    facts.update({f"SGE_HGR_{name}": " ".join(str(index) for index in indices) for name, indices in given.items()})
    facts["DROVER_GRES"] = ";".join(f"{name}:{','.join(str(index) for index in indices)}"
                                    for name, indices in given.items())
    gpus = given.get("gpu")
    if gpus:
        ids = ",".join(str(index) for index in gpus)
        facts.update({name: ids for name in GPU_SELECTORS})
        facts.update({"SLURM_JOB_GPUS": ids, "SLURM_STEP_GPUS": ids, "SLURM_GPUS_ON_NODE": str(len(gpus))})
    return facts
