"""The environment a real job sees, read from inside it, against the man pages' lists
(tests/data/manpages/sbatch-output-environment.txt and qsub-environment.txt): what the list says
Drover sets is there, with the right values, and what it says Drover does not set is absent. And
the environment of an srun step against srun's list (srun-output-environment.txt): every variable
is there but those the test names, with the reason, as not set."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from tests.helpers.cluster import LocalCluster

MANPAGES = pathlib.Path(__file__).resolve().parents[2] / "data" / "manpages"


def listed(name: str) -> dict[str, str]:
    """variable → when Drover sets it (always, array, request, parallel, pe, submitter, never)."""
    out = {}
    for line in (MANPAGES / name).read_text().splitlines():
        if line and not line.startswith("#"):
            variable, when, *_reason = line.split()
            out[variable] = when
    return out


def read_environment(path: pathlib.Path) -> dict[str, str]:
    return dict(entry.split("=", 1) for entry in path.read_text().split("\0") if "=" in entry)


def sbatch(cluster: LocalCluster, *args: str, env: dict[str, str] | None = None) -> str:
    bin_dir = cluster.root / "bin"
    if not bin_dir.exists():
        cluster.drover("compat", "install", str(bin_dir))
    done = subprocess.run([str(bin_dir / "sbatch"), "--parsable", *args], capture_output=True, text=True,
                          env={**cluster.env, **(env or {})}, cwd=cluster.workdir, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_sbatch_array_task_sees_slurms_and_grid_engines_variables(cluster: LocalCluster) -> None:
    """1. A job that completed, for --dependency. 2. An array of two tasks asking for two tasks of
    one CPU each and every option that sets a variable, submitted from an environment with HOME,
    SHELL, MAIL, TZ and TERM. 3. Each task writes its environment; both lists are checked against it."""
    first = sbatch(cluster, "--wrap", "true")
    cluster.drover("wait", first)
    script = cluster.workdir / "env.sh"
    script.write_text("#!/bin/sh\nenv -0 > env.$SLURM_ARRAY_TASK_ID\ncat \"$PE_HOSTFILE\" > hosts.$SLURM_ARRAY_TASK_ID\n")
    job = sbatch(cluster, "-a", "1-2", "-n", "2", "--ntasks-per-node=2", "--tres-per-task=cpu=1", "--mem-per-cpu=10",
                 "-A", "acct", "--qos=q", "--reservation=r", f"--dependency=afterok:{first}", "--export=ALL",
                 "-t", "5", "-J", "envjob", str(script),
                 env={"MAIL": "/var/mail/x", "TZ": "UTC", "TERM": "xterm", "SHELL": "/bin/sh", "HOME": "/home/x"})
    cluster.drover("wait", job)
    node = cluster.drover_json("nodes")[0]["name"]
    for index in ("1", "2"):
        env = read_environment(cluster.workdir / f"env.{index}")
        for variable, when in {**listed("sbatch-output-environment.txt"), **listed("qsub-environment.txt")}.items():
            assert (variable in env) == (when not in ("never", "pe")), f"{variable} ({when})"  # no PE asked
        assert env["SLURM_JOB_ID"] == env["SLURM_JOBID"] == env["SLURM_ARRAY_JOB_ID"] == env["JOB_ID"] == job
        assert env["SLURM_ARRAY_TASK_ID"] == env["SGE_TASK_ID"] == index
        assert (env["SGE_TASK_FIRST"], env["SGE_TASK_LAST"], env["SGE_TASK_STEPSIZE"]) == ("1", "2", "1")
        assert (env["SLURM_NTASKS"], env["SLURM_CPUS_PER_TASK"], env["SLURM_NTASKS_PER_NODE"]) == ("2", "1", "2")
        assert (env["NSLOTS"], env["SLURM_CPUS_ON_NODE"], env["SLURM_MEM_PER_CPU"]) == ("2", "2", "10")
        assert (env["SLURM_JOB_ACCOUNT"], env["SLURM_JOB_QOS"], env["SLURM_JOB_RESERVATION"]) == ("acct", "q", "r")
        assert env["SLURM_JOB_DEPENDENCY"] == f"afterok:{first}"
        assert env["SLURM_JOB_NAME"] == env["JOB_NAME"] == env["REQUEST"] == "envjob"
        assert env["SLURM_JOB_NODELIST"] == env["SLURMD_NODENAME"] == env["HOSTNAME"] == node
        assert env["SLURM_JOB_PARTITION"] == env["QUEUE"] == "default"
        assert env["SLURM_SUBMIT_DIR"] == env["SGE_O_WORKDIR"] == str(cluster.workdir)
        assert int(env["SLURM_JOB_END_TIME"]) - int(env["SLURM_JOB_START_TIME"]) == 300
        assert env["SLURM_TASK_PID"].isdigit() and env["ENVIRONMENT"] == "BATCH"
        assert (env["SGE_O_MAIL"], env["SGE_O_TZ"], env["SGE_O_TERM"]) == ("/var/mail/x", "UTC", "xterm")
        assert env["TMPDIR"] == env["TMP"] and os.path.dirname(env["PE_HOSTFILE"]) == env["TMPDIR"]
        assert env["SGE_STDOUT_PATH"] == str(cluster.workdir / f"slurm-{job}_{index}.out")
        host, slots, queue, cpus = (cluster.workdir / f"hosts.{index}").read_text().split()
        assert (host, slots, queue) == (node, "2", f"default@{node}") and len(cpus.split(",")) == 2
        assert env["RESTARTED"] == "0" and env["SLURM_RESTART_COUNT"] == "0"


def test_a_job_submitted_from_inside_another_sees_none_of_the_others_variables(cluster: LocalCluster) -> None:
    """A plain `drover submit` of two CPUs from an environment that is another job's step: the
    job sees its own ids, one task of all its CPUs, and nothing of the other job's step."""
    other = {"SLURM_JOB_ID": "999", "SLURM_JOBID": "999", "SLURM_NTASKS": "8", "SLURM_CPUS_PER_TASK": "4",
             "SLURM_STEP_ID": "3", "SLURM_PROCID": "5", "SLURM_ARRAY_TASK_ID": "7", "KEEP_ME": "yes"}
    result = cluster.workdir / "inner.env"
    done = subprocess.run([sys.executable, "-m", "drover", "submit", "--parsable", "-c", "2", "--", "sh", "-c",
                           f"env -0 > {result}"], capture_output=True, text=True, cwd=cluster.workdir,
                          env={**cluster.env, **other}, timeout=60)
    job_id = done.stdout.strip()
    cluster.drover("wait", job_id)
    env = read_environment(result)
    assert env["SLURM_JOB_ID"] == env["JOB_ID"] == job_id and env["KEEP_ME"] == "yes"
    assert (env["SLURM_NTASKS"], env["SLURM_CPUS_PER_TASK"], env["NSLOTS"]) == ("1", "2", "2")
    assert "SLURM_STEP_ID" not in env and "SLURM_ARRAY_TASK_ID" not in env and env["SLURM_PROCID"] == "0"
    assert env["SGE_TASK_ID"] == env["SGE_TASK_FIRST"] == "undefined"


# srun(1)'s OUTPUT ENVIRONMENT VARIABLES (srun-output-environment.txt) that a step on Drover does
# not get, each with the reason; a step gets every other one.
NOT_IN_A_STEP = {
    "SLURM_CONTAINER": "no OCI containers (--container is refused)",
    "SLURM_CONTAINER_ID": "no OCI containers (--container-id is refused)",
    "SLURM_RUNTIME": "no OCI containers (--runtime is refused)",
    "SLURM_CPU_BIND_LIST": "only from srun --cpu-bind, which this step is not given (tasks are not bound to CPUs of their own)",
    "SLURM_CPU_BIND_TYPE": "only from srun --cpu-bind, which this step is not given (tasks are not bound to CPUs of their own)",
    "SLURM_CPU_BIND_VERBOSE": "only from srun --cpu-bind, which this step is not given (tasks are not bound to CPUs of their own)",
    "SLURM_CPU_FREQ_REQ": "the node's CPU frequency governor is left alone: --cpu-freq changes nothing",
    "SLURM_GPUS_ON_NODE": "the test's job is given no GPUs",
    "SLURM_JOB_GPUS": "the test's job is given no GPUs",
    "SLURM_STEP_GPUS": "the test's job is given no GPUs",
    "SLURM_SHARDS_ON_NODE": "no GPUs",
    "SLURM_HET_SIZE": "no heterogeneous jobs",
    "SLURM_JOB_LICENSES": "licenses are not counted",
    "SLURM_JOB_NODES": "Slurm never sets this name: it sets SLURM_JOB_NUM_NODES, which a step gets (checked below)",
    "SLURM_JOB_SEGMENT_SIZE": "one node: no segments",
    "SLURM_MEM_BIND_LIST": "memory is not bound to NUMA nodes",
    "SLURM_MEM_BIND_PREFER": "memory is not bound to NUMA nodes",
    "SLURM_MEM_BIND_SORT": "memory is not bound to NUMA nodes",
    "SLURM_MEM_BIND_TYPE": "memory is not bound to NUMA nodes",
    "SLURM_MEM_BIND_VERBOSE": "memory is not bound to NUMA nodes",
    "SLURM_NETWORK": "--network is ignored",
    "SLURM_NODE_ALIASES": "no cloud nodes",
    "SLURM_OVERCOMMIT": "--overcommit is ignored",
    "SLURM_SRUN_COMM_PORT": "srun starts the tasks itself: no port listens for them",
    "SLURM_STEP_LAUNCHER_PORT": "srun starts the tasks itself: no port listens for them",
}


def srun_listed() -> list[str]:
    return [line for line in (MANPAGES / "srun-output-environment.txt").read_text().splitlines()
            if line and not line.startswith("#")]


def test_an_srun_step_sees_every_variable_of_sruns_list_that_drover_can_set(cluster: LocalCluster) -> None:
    """1. A job that completed, for --dependency. 2. A batch job of two tasks with the sbatch
    options whose variables a step passes on (-A, --qos, --reservation, --dependency, a time
    limit); its script runs a step of two tasks of one CPU each, and each task writes its pid and
    its environment. 3. Every variable of srun's list is there, with the step's values, but those
    of NOT_IN_A_STEP, which are not."""
    listed = srun_listed()
    assert len(listed) == len(set(listed)) and set(NOT_IN_A_STEP) <= set(listed)
    first = sbatch(cluster, "--wrap", "true")
    cluster.drover("wait", first)
    script = cluster.workdir / "step.sh"
    script.write_text("#!/bin/sh\nsrun -n 2 -c 1 sh -c 'echo $$ > pid.$SLURM_PROCID; env -0 > step.$SLURM_PROCID'\n")
    job = sbatch(cluster, "-n", "2", "-A", "acct", "--qos=q", "--reservation=r", f"--dependency=afterok:{first}",
                 "-t", "5", "-J", "stepjob", str(script),
                 env={"PATH": f"{cluster.root / 'bin'}:{os.environ.get('PATH', '')}"})  # srun, inside the job
    cluster.drover("wait", job)
    node = cluster.drover_json("nodes")[0]["name"]
    for task in ("0", "1"):
        env = read_environment(cluster.workdir / f"step.{task}")
        for variable in listed:
            assert (variable in env) == (variable not in NOT_IN_A_STEP), variable
        assert env["SLURM_JOB_ID"] == env["SLURM_JOBID"] == job and env["SLURM_JOB_NAME"] == "stepjob"
        assert env["SLURM_STEP_ID"] == env["SLURM_STEPID"] == "0"
        assert env["SLURM_PROCID"] == env["SLURM_LOCALID"] == task and env["SLURM_NODEID"] == "0"
        assert env["SLURM_TASK_PID"] == (cluster.workdir / f"pid.{task}").read_text().strip()
        assert {env[name] for name in ("SLURM_NTASKS", "SLURM_NPROCS", "SLURM_STEP_NUM_TASKS",
                                       "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")} == {"2"}
        assert env["SLURM_STEP_NUM_NODES"] == env["SLURM_JOB_NUM_NODES"] == "1" and env["SLURM_GTIDS"] == "0,1"
        assert env["SLURM_STEP_NODELIST"] == env["SLURM_JOB_NODELIST"] == env["SLURMD_NODENAME"] == node
        assert (env["SLURM_CPUS_PER_TASK"], env["SLURM_TRES_PER_TASK"]) == ("1", "cpu=1")
        assert env["SLURM_CPUS_ON_NODE"] == env["SLURM_JOB_CPUS_PER_NODE"] == "2"
        assert (env["SLURM_JOB_ACCOUNT"], env["SLURM_JOB_QOS"], env["SLURM_JOB_RESERVATION"]) == ("acct", "q", "r")
        assert env["SLURM_JOB_DEPENDENCY"] == f"afterok:{first}" and env["SLURM_JOB_PARTITION"] == "default"
        assert int(env["SLURM_JOB_END_TIME"]) - int(env["SLURM_JOB_START_TIME"]) == 300
        assert env["SLURM_SUBMIT_DIR"] == str(cluster.workdir) and env["SLURM_SUBMIT_HOST"]
        assert env["SLURM_LAUNCH_NODE_IPADDR"] == env["SLURM_SRUN_COMM_HOST"] == "127.0.0.1"
        assert len(env["SLURM_UMASK"]) == 4 and set(env["SLURM_UMASK"]) <= set("01234567")
        assert env["SRUN_DEBUG"] == "3" and env["SLURM_PRIO_PROCESS"].lstrip("-").isdigit()
