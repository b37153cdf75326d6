"""Submit long steps with submitit, wait on them, and cancel them all on Ctrl-C, as a user's
script does. Prints the job ids once submitted and the states Slurm reports after cancelling.

Run with the tool's Python: driver FOLDER."""

import json
import sys
import time

import submitit


def sleep_for(seconds):
    time.sleep(seconds)
    return seconds


def main(folder):
    executor = submitit.AutoExecutor(folder=folder, cluster="slurm")
    executor.update_parameters(name="long", timeout_min=10, cpus_per_task=1, mem_gb=0.5)
    jobs = executor.map_array(sleep_for, [300, 300])
    jobs.append(executor.submit(sleep_for, 300))  # waits: the two above fill the node
    try:
        print("SUBMITTED " + " ".join(job.job_id for job in jobs), flush=True)
        for job in jobs:
            job.result()
    except KeyboardInterrupt:
        for job in jobs:
            job.cancel()
        deadline = time.monotonic() + 60
        while not all(job.done(force_check=True) for job in jobs) and time.monotonic() < deadline:
            time.sleep(0.5)
        print("CANCELLED " + json.dumps({job.job_id: job.state for job in jobs}), flush=True)
        sys.exit(130)


if __name__ == "__main__":
    main(sys.argv[1])
