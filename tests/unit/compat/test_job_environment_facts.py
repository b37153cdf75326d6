"""The job's environment as the shepherd builds it, on plain data (shepherd/environment.py)."""

from __future__ import annotations

import dataclasses
from typing import Any

from tests.helpers.attempt_config import attempt_config

from drover.shepherd.config import ShepherdConfig, read_config
from drover.shepherd.environment import build_environment, pe_hostfile, site_environment


def a_config(**overrides: Any) -> ShepherdConfig:
    config = {
        "attempt": "7.0.2", "job_id": 7, "task_index": 0, "attempt_number": 2, "is_array": False,
        "array_first": None, "array_last": None, "array_step": None, "array_count": None, "name": "job",
        "owner": "nobody", "node": "n1", "workdir": "/w", "submit_dir": "/s", "stdout": "/w/out", "stderr": None,
        "environment": {}, "cpus": 4, "cpu_ids": [2, 3, 4, 5], "memory_mib": 0, "time_limit_s": None,
        "queue": "short", "cluster": "c1",
    }
    config.update(overrides)
    # Decoded as the shepherd decodes its record, over a whole one (tests/helpers/attempt_config.py)
    job_name = config.pop("name")
    return read_config({**attempt_config("/w", **config), "name": job_name})


def test_sbatchs_request_shapes_the_slurm_variables() -> None:
    env = build_environment(a_config(environment={"SLURM_NTASKS": "2", "SLURM_CPUS_PER_TASK": "2"}), "/t")
    assert (env["SLURM_NTASKS"], env["SLURM_CPUS_PER_TASK"], env["NSLOTS"]) == ("2", "2", "4")
    plain = build_environment(a_config(), "/t")
    assert (plain["SLURM_NTASKS"], plain["SLURM_CPUS_PER_TASK"]) == ("1", "4")
    too_many = build_environment(a_config(environment={"SLURM_NTASKS": "64"}), "/t")
    assert too_many["SLURM_NTASKS"] == "1"  # more tasks than CPUs: not this job's request


def test_another_jobs_variables_are_dropped() -> None:
    inherited = {"SLURM_JOB_ID": "3", "SLURM_NTASKS": "2", "SLURM_STEP_ID": "1", "SLURM_CONF": "/etc/s.conf", "A": "b"}
    env = build_environment(a_config(environment=inherited), "/t")
    assert env["SLURM_JOB_ID"] == "7" and env["SLURM_NTASKS"] == "1" and "SLURM_STEP_ID" not in env
    assert env["SLURM_CONF"] == "/etc/s.conf" and env["A"] == "b"


def test_grid_engines_facts() -> None:
    env = build_environment(a_config(environment={"HOME": "/h", "LOGNAME": "me"}), "/t")
    assert (env["QUEUE"], env["SLURM_JOB_PARTITION"], env["RESTARTED"], env["SLURM_RESTART_COUNT"]) == (
        "short", "short", "1", "1")
    assert (env["SGE_O_HOME"], env["SGE_O_LOGNAME"], env["SGE_BINDING"]) == ("/h", "me", "2 3 4 5")
    assert env["SGE_TASK_ID"] == env["SGE_TASK_STEPSIZE"] == "undefined" and env["PE_HOSTFILE"] == "/t/pe_hostfile"
    assert pe_hostfile(a_config()) == "n1 4 short@n1 2,3,4,5\n"
    assert pe_hostfile(a_config(cpus=1, cpu_ids=[0])) is None


def test_the_sites_scripts_get_nothing_derived_from_the_jobs_environment() -> None:
    env = site_environment(a_config(environment={"HOME": "/h", "SLURM_NTASKS": "2", "SLURM_SUBMIT_HOST": "x"}))
    assert "SGE_O_HOME" not in env and env["SLURM_NTASKS"] == "1" and env["SLURM_SUBMIT_HOST"] == "n1"
    assert not {"TMPDIR", "TMP", "PE_HOSTFILE"} & set(env)


def a_job_on_three_hosts(**overrides: Any) -> Any:
    # 10 slots of a parallel environment: 4 on the master n1, 4 on n2, 2 on m7
    return a_config(pe="mpi", pe_slots=10, pe_hosts=[{"node": "n2", "cpu_ids": [0, 1, 2, 3]},
                                                     {"node": "m7", "cpu_ids": [5, 6]}], **overrides)


def test_a_job_on_several_hosts_has_the_slurm_variables_of_them_all() -> None:
    env = build_environment(a_job_on_three_hosts(), "/t")
    assert (env["SLURM_JOB_NODELIST"], env["SLURM_NODELIST"]) == ("n[1-2],m7", "n[1-2],m7")
    assert (env["SLURM_NNODES"], env["SLURM_JOB_NUM_NODES"], env["NHOSTS"]) == ("3", "3", "3")
    assert (env["SLURM_JOB_CPUS_PER_NODE"], env["SLURM_TASKS_PER_NODE"]) == ("4(x2),2", "4(x2),2")
    assert (env["SLURM_NTASKS"], env["SLURM_NPROCS"], env["SLURM_CPUS_PER_TASK"], env["NSLOTS"]) == (
        "10", "10", "1", "10")
    # what is the master's own: its node and its CPUs
    assert (env["SLURMD_NODENAME"], env["SLURM_CPUS_ON_NODE"], env["SLURM_NODEID"]) == ("n1", "4", "0")
    # sbatch's request of fewer tasks, passed on: counted out over the nodes as srun would
    fewer = build_environment(a_job_on_three_hosts(environment={"SLURM_NTASKS": "5", "SLURM_CPUS_PER_TASK": "2"}), "/t")
    assert (fewer["SLURM_NTASKS"], fewer["SLURM_CPUS_PER_TASK"], fewer["SLURM_TASKS_PER_NODE"]) == ("5", "2", "2(x2),1")


def test_a_job_on_one_host_keeps_its_one_node_variables() -> None:
    env = build_environment(a_config(pe="mpi", pe_slots=4), "/t")
    assert (env["SLURM_JOB_NODELIST"], env["SLURM_NNODES"], env["SLURM_JOB_CPUS_PER_NODE"]) == ("n1", "1", "4")
    assert (env["SLURM_NTASKS"], env["SLURM_TASKS_PER_NODE"], env["SLURM_CPUS_PER_TASK"]) == ("1", "1", "4")


def test_a_task_started_on_another_host_keeps_its_callers_job_and_step_variables() -> None:
    # the caller: srun on the master, starting task 5 of a step on n2 (as the controller orders
    # it: the master's order on n2, without the job's other hosts)
    caller = build_environment(a_job_on_three_hosts(), "/t")
    caller.update(SLURM_PROCID="5", SLURM_LOCALID="1", SLURM_NODEID="1", SLURM_STEP_ID="0",
                  SLURM_STEP_NODELIST="n[1-2]", SLURMD_NODENAME="n2")
    task = a_config(pe="mpi", pe_slots=10, pe_task="3", node="n2", cpus=4, cpu_ids=[0, 1, 2, 3], environment=caller)
    env = build_environment(task, "/t2")
    assert (env["SLURM_PROCID"], env["SLURM_LOCALID"], env["SLURM_NODEID"], env["SLURM_STEP_ID"]) == (
        "5", "1", "1", "0")
    assert (env["SLURM_JOB_NODELIST"], env["SLURM_NNODES"], env["SLURM_NTASKS"], env["NHOSTS"]) == (
        "n[1-2],m7", "3", "10", "3")
    # the host's own facts are this host's
    assert (env["SLURMD_NODENAME"], env["DROVER_NODE"], env["HOSTNAME"], env["TMPDIR"]) == ("n2", "n2", "n2", "/t2")
    assert env["SGE_BINDING"] == "0 1 2 3" and env["PE_HOSTFILE"] == "/t2/pe_hostfile"
    # a caller's variables of another job are not this job's
    other = dict(caller, SLURM_JOB_ID="3", SLURM_JOBID="3")
    env = build_environment(dataclasses.replace(task, environment=other), "/t2")
    assert (env["SLURM_JOB_ID"], env["SLURM_PROCID"], env["SLURM_JOB_NODELIST"]) == ("7", "0", "n2")
    assert "SLURM_STEP_ID" not in env
