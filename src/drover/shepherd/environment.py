"""The job's environment: what it asked for, plus the facts of its attempt under Drover's names
and under the Grid Engine and Slurm names existing scripts read. And the site's: what the node's
own scripts get, with nothing of the job's. Pure."""

from __future__ import annotations

import os
import pwd

from drover.records import AttemptConfig

# The site's scripts (node and queue prolog and epilog, PE start and stop) run with this PATH and
# the attempt's facts, never with the job's environment: the job chose its LD_PRELOAD, BASH_ENV,
# ENV, PATH, PYTHON*, IFS and exported bash functions, and any of them would change how a site
# script loads or runs.
SITE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def site_environment(config: AttemptConfig) -> dict[str, str]:
    """The environment of the site's methods: PATH, the attempt's facts (DROVER_*, and the Grid
    Engine and Slurm names: job id, name, owner, node, CPUs, working and submit directories,
    array indices), and HOME, USER, LOGNAME and SHELL of whom the method runs as (the node
    daemon's user). LANG=C. Nothing else."""
    facts = _facts(config, tmpdir="")
    facts.pop("TMPDIR")  # the attempt's TMPDIR is the owner's directory: not for root's scripts
    me = pwd.getpwuid(os.geteuid())
    env = {"PATH": SITE_PATH, "LANG": "C", "HOME": me.pw_dir, "USER": me.pw_name, "LOGNAME": me.pw_name,
           "SHELL": "/bin/sh", "DROVER_JOB_OWNER": config["owner"], "DROVER_WORKDIR": config["workdir"]}
    env.update(facts)
    return env


def build_environment(config: AttemptConfig, tmpdir: str) -> dict[str, str]:
    env = dict(config["environment"])
    env.update(_facts(config, tmpdir))
    return env


def _facts(config: AttemptConfig, tmpdir: str) -> dict[str, str]:
    """The facts of the attempt, under Drover's, Grid Engine's and Slurm's names."""
    job_id, index = str(config["job_id"]), str(config["task_index"])
    cpus, node = str(config["cpus"]), config["node"]
    facts = {
        "DROVER_JOB_ID": job_id,
        "DROVER_TASK_ID": index,
        "DROVER_ATTEMPT": str(config["attempt_number"]),
        "DROVER_JOB_NAME": config["name"],
        "DROVER_NODE": node,
        "DROVER_CPUS": cpus,
        "DROVER_SUBMIT_DIR": config["submit_dir"],
        "TMPDIR": tmpdir,
        # Grid Engine
        "JOB_ID": job_id,
        "JOB_NAME": config["name"],
        "NSLOTS": cpus,
        "SGE_TASK_ID": index if config["is_array"] else "undefined",
        "SGE_O_WORKDIR": config["submit_dir"],
        # Slurm
        "SLURM_JOB_ID": job_id,
        "SLURM_JOBID": job_id,
        "SLURM_JOB_NAME": config["name"],
        "SLURM_CPUS_PER_TASK": cpus,
        "SLURM_CPUS_ON_NODE": cpus,
        "SLURM_JOB_NODELIST": node,
        "SLURM_NODELIST": node,
        "SLURMD_NODENAME": node,
        "SLURM_SUBMIT_DIR": config["submit_dir"],
        "SLURM_JOB_USER": config["owner"],
        "SLURM_NTASKS": "1",
        "SLURM_JOB_NUM_NODES": "1",
        "SLURM_NNODES": "1",
        "SLURM_NODEID": "0",
        "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0",
    }
    if config["is_array"]:
        first, last, step, count = (
            str(config["array_first"]), str(config["array_last"]),
            str(config["array_step"]), str(config["array_count"]),
        )
        facts.update({
            "DROVER_ARRAY_JOB_ID": job_id, "DROVER_ARRAY_TASK_ID": index,
            "DROVER_ARRAY_TASK_MIN": first, "DROVER_ARRAY_TASK_MAX": last,
            "DROVER_ARRAY_TASK_STEP": step, "DROVER_ARRAY_TASK_COUNT": count,
            "SGE_TASK_FIRST": first, "SGE_TASK_LAST": last, "SGE_TASK_STEPSIZE": step,
            "SLURM_ARRAY_JOB_ID": job_id, "SLURM_ARRAY_TASK_ID": index,
            "SLURM_ARRAY_TASK_MIN": first, "SLURM_ARRAY_TASK_MAX": last,
            "SLURM_ARRAY_TASK_STEP": step, "SLURM_ARRAY_TASK_COUNT": count,
        })
    return facts
