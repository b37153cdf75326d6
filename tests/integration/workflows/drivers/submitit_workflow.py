"""A three-step submitit workflow, as its users write one: a preparation step with resources,
an array of steps over its result, and a step that fails. Prints one JSON summary line.

Run with the tool's Python: driver FOLDER."""

import json
import os
import sys

import submitit


def prepare(count):
    env = submitit.JobEnvironment()
    return {"values": list(range(1, count + 1)), "job_id": env.job_id,
            "cpus": os.environ.get("SLURM_CPUS_PER_TASK"), "ntasks": env.num_tasks,
            "nodes": env.hostnames}


def square(value):
    return value * value


def broken():
    raise ValueError("this step fails on purpose")


def main(folder):
    executor = submitit.AutoExecutor(folder=folder, cluster="slurm")
    executor.update_parameters(name="prepare", timeout_min=5, cpus_per_task=2, mem_gb=1)
    prepared = executor.submit(prepare, 3).result()
    executor.update_parameters(name="square", cpus_per_task=1, mem_gb=0.5, slurm_array_parallelism=2)
    squares = executor.map_array(square, prepared["values"])
    executor.update_parameters(name="broken")
    failing = executor.submit(broken)
    summary = {"prepared": prepared, "squares": [job.result() for job in squares],
               "square_ids": [job.job_id for job in squares]}
    try:
        failing.result()
        summary["failure"] = None
    except submitit.core.utils.FailedJobError as error:
        summary["failure"] = str(error).splitlines()[0]
    failing.watcher.update()  # the state Slurm's accounting reports, not a cached one
    summary["failed_state"] = failing.state
    summary["failed_id"] = failing.job_id
    print("SUMMARY " + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
