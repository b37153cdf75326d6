"""A dask-jobqueue workflow, as its users run one: an SGECluster, SLURMCluster, PBSCluster, LSFCluster or HTCondorCluster
whose workers are batch jobs with resources, a task graph over them with one failing task, and
the cluster closed on leaving the `with` block (qdel / scancel of every worker job). Prints the
worker job ids and a JSON summary.

Run with the tool's Python: driver slurm|sge|pbs|lsf|htcondor LOG_DIR [interrupt]
With "interrupt" it runs one long task instead and leaves the interruption to the caller."""

import json
import sys
import time

from dask.distributed import Client
from dask_jobqueue import HTCondorCluster, LSFCluster, PBSCluster, SGECluster, SLURMCluster


def cluster(kind, log_dir):
    # Scheduler and workers on loopback only.
    common = {"cores": 1, "processes": 1, "walltime": "00:05:00", "log_directory": log_dir,
              "interface": "lo"}
    if kind == "slurm":
        return SLURMCluster(memory="1GiB", **common)
    if kind == "pbs":
        return PBSCluster(memory="1GiB", **common)
    if kind == "htcondor":  # HTCondor's jobs have no walltime of their own in dask-jobqueue
        common.pop("walltime")
        return HTCondorCluster(memory="1GiB", disk="1GiB", **common)
    if kind == "lsf":  # LSF's -W is [hours:]minutes
        return LSFCluster(memory="1GiB", **{**common, "walltime": "00:05"})
    return SGECluster(memory="1GiB", resource_spec="h_vmem=1G", **common)


def square(value):
    return value * value


def broken(value):
    raise ValueError(f"task {value} fails on purpose")


def main(kind, log_dir, mode):
    with cluster(kind, log_dir) as jobs, Client(jobs) as client:
        jobs.scale(jobs=2)
        client.wait_for_workers(2, timeout=120)
        ids = sorted(job.job_id for job in jobs.workers.values())
        print("SUBMITTED " + " ".join(ids), flush=True)
        if mode == "interrupt":
            client.submit(time.sleep, 300).result()
            return
        total = client.submit(sum, client.map(square, range(5))).result()
        try:
            client.submit(broken, 7).result()
            failure = None
        except ValueError as error:
            failure = str(error)
        hosts = sorted({info["host"] for info in client.scheduler_info()["workers"].values()})
    print("SUMMARY " + json.dumps({"total": total, "failure": failure, "jobs": ids, "hosts": hosts}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "workflow")
