"""The devices an attempt was given, in its job's environment and its site scripts'
(shepherd/environment.py): CUDA's, Slurm's and Grid Engine's names."""

from __future__ import annotations

from typing import Any

from tests.helpers.attempt_config import attempt_config

from drover.shepherd.config import ShepherdConfig, read_config
from drover.shepherd.environment import build_environment, site_environment


def a_config(**overrides: Any) -> ShepherdConfig:
    config = {
        "attempt": "7.0.1", "job_id": 7, "task_index": 0, "attempt_number": 1, "is_array": False,
        "array_first": None, "array_last": None, "array_step": None, "array_count": None, "name": "job",
        "owner": "nobody", "node": "n1", "workdir": "/w", "submit_dir": "/s", "stdout": "/w/out", "stderr": None,
        "environment": {}, "cpus": 1, "cpu_ids": [], "memory_mib": 0, "time_limit_s": None,
        "queue": "gpu", "cluster": "c1",
    }
    config.update(overrides)
    # Decoded as the shepherd decodes its record, over a whole one (tests/helpers/attempt_config.py)
    job_name = config.pop("name")
    return read_config({**attempt_config("/w", **config), "name": job_name})


def test_a_job_given_gpus_sees_them_under_every_name() -> None:
    env = build_environment(a_config(gres={"gpu": [2, 0], "nic": [1]}), "/t")
    for variable in ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "SLURM_JOB_GPUS",
                     "SLURM_STEP_GPUS"):
        assert env[variable] == "0,2", variable
    assert env["SLURM_GPUS_ON_NODE"] == "2"
    assert (env["SGE_HGR_gpu"], env["SGE_HGR_nic"]) == ("0 2", "1")
    assert env["DROVER_GRES"] == "gpu:0,2;nic:1"


SELECTORS = ("CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")
SLURM_GPU_FACTS = ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE")


def test_other_resources_without_gpus_select_no_gpu() -> None:
    env = build_environment(a_config(gres={"nic": [0], "fpga": [3, 1]}), "/t")
    assert [env[variable] for variable in SELECTORS] == ["", "", ""]
    assert not any(variable in env for variable in SLURM_GPU_FACTS)
    assert (env["SGE_HGR_fpga"], env["SGE_HGR_nic"], env["DROVER_GRES"]) == ("1 3", "0", "fpga:1,3;nic:0")


def test_a_job_given_no_gpu_sees_none_whatever_it_asked_for() -> None:
    """CUDA, ROCm and OpenCL would use every GPU of the node where their variable is unset: a job
    given none gets each set empty (no device), over its own."""
    mine = {name: "0,1" for name in SELECTORS}
    for config in (a_config(), a_config(gres={}), a_config(gres={"gpu": []}), a_config(environment=mine)):
        env = build_environment(config, "/t")
        assert [env[variable] for variable in SELECTORS] == ["", "", ""]
        assert not any(variable in env for variable in SLURM_GPU_FACTS)
        assert "DROVER_GRES" not in env and not any(variable.startswith("SGE_HGR_") for variable in env)


def test_the_job_cannot_claim_gpus_it_was_not_given() -> None:
    """The facts go over what the job asked for: its own CUDA_VISIBLE_DEVICES loses to the
    attempt's."""
    env = build_environment(a_config(gres={"gpu": [1]}, environment={"CUDA_VISIBLE_DEVICES": "0,1,2,3"}), "/t")
    assert env["CUDA_VISIBLE_DEVICES"] == "1"


def test_an_inherited_jobs_gpu_variables_are_dropped() -> None:
    inherited = {"SLURM_JOB_ID": "9", "SLURM_JOB_GPUS": "3", "SLURM_STEP_GPUS": "3", "SLURM_GPUS_ON_NODE": "1"}
    env = build_environment(a_config(environment=inherited), "/t")
    assert not any(variable in env for variable in ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS", "SLURM_GPUS_ON_NODE"))


def test_the_site_scripts_see_the_attempts_devices_too() -> None:
    """As Slurm's prolog and epilog see SLURM_JOB_GPUS and CUDA_VISIBLE_DEVICES."""
    env = site_environment(a_config(gres={"gpu": [3]}))
    assert (env["CUDA_VISIBLE_DEVICES"], env["SLURM_JOB_GPUS"], env["SGE_HGR_gpu"]) == ("3", "3", "3")
    assert env["DROVER_GRES"] == "gpu:3"
