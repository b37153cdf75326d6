"""A parsl workflow on a Slurm, Grid Engine, PBS Pro, Torque, LSF or HTCondor provider, as its users configure one: a
HighThroughputExecutor whose block is a batch job with resources, Python and Bash apps, one of
which fails. Prints the block's job id, the state the provider reads back for it through
sacct/qstat/bjobs, and a JSON summary.

Run with the tool's Python: driver slurm|gridengine|pbspro|torque|lsf|condor RUN_DIR [interrupt]
With "interrupt" it runs one long app instead and leaves the interruption to the caller: leaving
`with parsl.load(...)` on KeyboardInterrupt cancels the block (scancel / qdel / bkill)."""

import json
import os
import sys
import time

import parsl
from parsl.app.app import bash_app, python_app
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.launchers import SingleNodeLauncher
from parsl.providers import (
    CondorProvider,
    GridEngineProvider,
    LSFProvider,
    PBSProProvider,
    SlurmProvider,
    TorqueProvider,
)


def provider(kind):
    # The batch job runs the worker pool from this environment, as worker_init does on clusters.
    worker_init = f"export PATH={os.path.dirname(sys.executable)}:$PATH"
    if kind == "slurm":
        return SlurmProvider(walltime="00:05:00", cores_per_node=2, mem_per_node=1, exclusive=False,
                             init_blocks=1, max_blocks=1, worker_init=worker_init)
    if kind == "pbspro":
        return PBSProProvider(walltime="00:05:00", cpus_per_node=2, select_options=":mem=1gb", init_blocks=1,
                              max_blocks=1, worker_init=worker_init)
    if kind == "condor":
        return CondorProvider(cores_per_slot=2, mem_per_slot=1, init_blocks=1, max_blocks=1, worker_init=worker_init)
    if kind == "lsf":  # by cores: -n 2 -R "span[ptile=2]" (by nodes is CSM's -nnodes)
        return LSFProvider(walltime="00:05:00", request_by_nodes=False, cores_per_block=2, cores_per_node=2,
                           init_blocks=1, max_blocks=1, worker_init=worker_init, scheduler_options="#BSUB -M 1GB",
                           launcher=SingleNodeLauncher())
    if kind == "torque":
        return TorqueProvider(walltime="00:05:00", init_blocks=1, max_blocks=1, worker_init=worker_init,
                              scheduler_options="#PBS -l mem=1gb", launcher=SingleNodeLauncher())
    return GridEngineProvider(walltime="00:05:00", init_blocks=1, max_blocks=1, worker_init=worker_init,
                              scheduler_options="#$ -pe smp 2\n#$ -l h_vmem=512M")


@python_app
def inc(x):
    return x + 1


@python_app
def total(*values):
    return sum(values)


@bash_app
def fails():
    return "echo about to fail >&2; exit 3"


@bash_app
def sleeps():
    return "sleep 300"


def block_ids(executor):
    return sorted(executor.provider.resources)


def main(kind, run_dir, mode):
    executor = HighThroughputExecutor(label="htex", address="127.0.0.1", max_workers_per_node=2,
                                      cores_per_worker=1, provider=provider(kind))
    # The context manager is how parsl's documentation runs a workflow: on leaving it, also by an
    # exception such as KeyboardInterrupt, parsl cleans up, cancelling its blocks.
    with parsl.load(Config(executors=[executor], run_dir=run_dir, strategy="none")):
        if mode == "interrupt":
            future = sleeps()
            while not block_ids(executor):
                time.sleep(0.2)
            print("SUBMITTED " + " ".join(block_ids(executor)), flush=True)
            future.result()
            return
        summary = {"total": total(*[inc(i) for i in range(4)]).result()}
        summary["blocks"] = block_ids(executor)
        try:
            fails().result()
            summary["failure"] = None
        except Exception as error:
            summary["failure"] = f"{type(error).__name__}: {error}"
        try:  # what parsl's status poller sees of the running block, through sacct or qstat
            statuses = executor.provider.status(summary["blocks"])
            summary["block_states"] = [status.state.name for status in statuses]
        except Exception as error:
            summary["block_states"] = f"{type(error).__name__}: {error}"
    print("SUMMARY " + json.dumps(summary), flush=True)

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "workflow")
