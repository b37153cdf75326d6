"""The job's environment: what it asked for, plus the facts of its attempt under Drover's names
and under the Grid Engine and Slurm names existing scripts read. Pure."""

from __future__ import annotations

from drover.spool.records import AttemptConfig


def build_environment(config: AttemptConfig, tmpdir: str) -> dict[str, str]:
    env = dict(config["environment"])
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
    env.update(facts)
    return env
