"""A PSI/J workflow on its Slurm, PBS or LSF executor, as its users write one: jobs described by a JobSpec
with resources and a duration, run one after another, one of which fails. Prints a JSON summary.

Run with the tool's Python: driver WORK_DIR [interrupt|workflow [slurm|pbs|lsf]]
With "interrupt" it submits two long jobs, waits on them, and cancels both on Ctrl-C."""

import json
import sys
import time
from datetime import timedelta
from pathlib import Path

from psij import Job, JobAttributes, JobExecutor, JobSpec, JobState, ResourceSpecV1
from psij.executors.batch.lsf import LsfExecutorConfig
from psij.executors.batch.pbs_base import PBSExecutorConfig
from psij.executors.batch.slurm import SlurmExecutorConfig


def job(work, name, script, cpus=1, memory_mib=256, minutes=5):
    spec = JobSpec(executable="/bin/sh", arguments=["-c", script], directory=work, name=name,
                   stdout_path=work / f"{name}.out", stderr_path=work / f"{name}.err",
                   resources=ResourceSpecV1(process_count=1, cpu_cores_per_process=cpus,
                                            memory=memory_mib * 1024 * 1024),
                   attributes=JobAttributes(duration=timedelta(minutes=minutes)))
    return Job(spec)


def main(work, mode, kind):
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    # The queue is polled every second instead of every 30, to keep the run short; PSI/J's
    # scripts and exit-code files go under WORK_DIR instead of ~/.psij.
    settings = {"work_directory": work / ".psij", "queue_polling_interval": 1, "initial_queue_polling_delay": 1,
                "keep_files": True}
    configs = {"pbs": PBSExecutorConfig, "lsf": LsfExecutorConfig}
    config = configs.get(kind, SlurmExecutorConfig)(**settings)
    executor = JobExecutor.get_instance(kind, config=config)
    job_id = {"pbs": "$PBS_JOBID", "lsf": "$LSB_JOBID"}.get(kind, "$SLURM_JOB_ID")
    # PSI/J's LSF template sets PSIJ_NODEFILE to $LSB_HOSTS, the hosts themselves, not a file.
    nodes = 'echo "$PSIJ_NODEFILE"' if kind == "lsf" else 'cat "$PSIJ_NODEFILE"'
    if mode == "interrupt":
        jobs = [job(work, f"long{i}", "sleep 300", minutes=10) for i in range(2)]
        try:
            for each in jobs:
                executor.submit(each)
            print("SUBMITTED " + " ".join(each.native_id for each in jobs), flush=True)
            for each in jobs:
                each.wait()
        except KeyboardInterrupt:
            for each in jobs:
                each.cancel()
            states = {each.native_id: str(each.wait(timeout=timedelta(seconds=60)).state) for each in jobs}
            print("CANCELLED " + json.dumps(states), flush=True)
            sys.exit(130)
        return
    summary = {}
    steps = [("produce", f"echo {job_id} > produced.txt; nproc > cpus.txt; {nodes} > nodes.txt", 2, 512),
             ("consume", "cat produced.txt produced.txt > consumed.txt", 1, 256),
             ("broken", "echo this step fails on purpose >&2; exit 3", 1, 256)]
    for name, script, cpus, memory in steps:
        started = time.monotonic()
        each = job(work, name, script, cpus, memory)
        executor.submit(each)
        status = each.wait(timeout=timedelta(seconds=90))
        summary[name] = {"id": each.native_id, "state": str(status.state) if status else None,
                         "exit_code": status.exit_code if status else None,
                         "seconds": round(time.monotonic() - started, 1)}
        if status is None or status.state != JobState.COMPLETED:
            break
    print("SUMMARY " + json.dumps(summary), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "workflow", sys.argv[3] if len(sys.argv) > 3 else "slurm")
