"""The job's environment as the shepherd builds it, on plain data (shepherd/environment.py)."""

from __future__ import annotations

from typing import Any

from drover.shepherd.environment import build_environment, pe_hostfile, site_environment


def a_config(**overrides: Any) -> Any:
    config = {
        "attempt": "7.0.2", "job_id": 7, "task_index": 0, "attempt_number": 2, "is_array": False,
        "array_first": None, "array_last": None, "array_step": None, "array_count": None, "name": "job",
        "owner": "nobody", "node": "n1", "workdir": "/w", "submit_dir": "/s", "stdout": "/w/out", "stderr": None,
        "environment": {}, "cpus": 4, "cpu_ids": [2, 3, 4, 5], "memory_mib": 0, "time_limit_s": None,
        "queue": "short", "cluster": "c1",
    }
    config.update(overrides)
    return config


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
