"""The tools that speak PBS, unchanged, on the PBS front ends (`drover compat install --flavor
pbs`): dask-jobqueue's PBSCluster (`qsub SCRIPT` with `#PBS -l select=1:ncpus=1:mem=1GB`,
`-l walltime`, `-e/-o DIR/`, `qdel ID`); parsl's PBSProProvider (`qsub SCRIPT` with `#PBS -S -N
-m n -l walltime -l select=N:ncpus=C:mem=…`, the id read as qsub's whole line, `qstat -x -f -F
json IDS`) and TorqueProvider (`-l nodes=N:ppn=C`, plain `qstat IDS` read by column); PSI/J's
pbs executor (`#PBS -N="name" -l select=…:mpiprocs=…:mem=BYTES -l place=scatter:shared -e/-o
/dev/null`, `qstat -f -F json -x IDS`, `qdel ID`, Exit_status 265 read as cancelled)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.workflow_runs import (
    assert_cancelled,
    interrupt_psij,
    run_dask,
    run_parsl,
    run_psij,
)
from tests.helpers.workflow_tools import ToolEnv

pytestmark = pytest.mark.timeout(240)
SERVER = socket.gethostname().split(".")[0]


def test_dask_jobqueue_pbscluster_scales_to_two_workers_and_computes(
        cluster: LocalCluster, pbs_front_ends: Path, dask_env: ToolEnv) -> None:
    logs = cluster.workdir / "logs"
    summary = run_dask(cluster, pbs_front_ends, dask_env, "pbs", logs)
    assert summary["total"] == sum(i * i for i in range(5))
    assert summary["failure"] == "task 7 fails on purpose"
    ids = summary["jobs"]
    assert isinstance(ids, list) and len(ids) == 2
    for job_id in ids:
        job = cluster.client().job(int(job_id.split(".")[0]))
        # select=1:ncpus=1:mem=1GB (PBS's gb is 1024 mb), walltime=00:05:00
        assert (job.name, job.cpus, job.memory_mib, job.time_limit_s) == ("dask-worker", 1, 1024, 300)
        assert job.state == "cancelled"  # qdel'd by the tool on leaving its `with` block
    # `-e DIR/ -o DIR/`: PBS's NAME.oSEQ and NAME.eSEQ in the directory.
    assert sorted(p.name for p in logs.iterdir()) == sorted(
        f"dask-worker.{kind}{i.split('.')[0]}" for i in ids for kind in "eo")


@pytest.mark.parametrize("kind", ["pbspro", "torque"])
def test_a_parsl_app_runs_in_a_pbs_block_read_back_through_qstat(
        cluster: LocalCluster, pbs_front_ends: Path, parsl_env: ToolEnv, kind: str) -> None:
    summary = run_parsl(cluster, pbs_front_ends, parsl_env, kind)
    assert summary["total"] == 1 + 2 + 3 + 4
    assert summary["failure"] == "BashExitFailure: bash_app fails failed with unix exit code 3"
    assert summary["block_states"] == ["RUNNING"]  # job_state R, through qstat
    (block,) = summary["blocks"]
    assert block == f"{block.split('.')[0]}.{SERVER}"  # qsub's line, kept whole as the id
    job = cluster.client().job(int(block.split(".")[0]))
    assert job.memory_mib == 1024 and job.time_limit_s == 300
    if kind == "pbspro":
        assert job.cpus == 2  # select=1:ncpus=2
    assert job.state == "cancelled"


def test_psij_pbs_executor_runs_jobs_and_reports_the_failed_ones_exit_code(
        cluster: LocalCluster, pbs_front_ends: Path, psij_env: ToolEnv) -> None:
    work = cluster.workdir / "psij"
    summary = run_psij(cluster, pbs_front_ends, psij_env, work, "pbs")
    assert [(step["state"], step["exit_code"]) for step in summary.values()] == [
        ("COMPLETED", 0), ("COMPLETED", 0), ("FAILED", 3)]
    produced = summary["produce"]["id"]
    assert produced == f"{produced.split('.')[0]}.{SERVER}"
    assert (work / "consumed.txt").read_text() == f"{produced}\n{produced}\n"  # $PBS_JOBID is qsub's id
    # PSI/J's PBS Pro template asks ncpus= for the processes on each node (one here), not for
    # their cores, as a real PBS Pro then gives it.
    assert (work / "cpus.txt").read_text() == "1\n"
    node = cluster.client().nodes()[0].name
    assert (work / "nodes.txt").read_text() == f"{node}\n"  # $PBS_NODEFILE: one line per CPU
    job = cluster.client().job(int(produced.split(".")[0]))
    assert (job.cpus, job.memory_mib, job.time_limit_s) == (1, 512, 300)  # mem=536870912 (bytes)
    assert cluster.client().job(int(summary["broken"]["id"].split(".")[0])).state == "completed"


def test_psij_cancels_its_pbs_jobs(cluster: LocalCluster, pbs_front_ends: Path, psij_env: ToolEnv,
                                   nothing_left_running: Callable[[], None]) -> None:
    ids, states = interrupt_psij(cluster, pbs_front_ends, psij_env, "pbs")
    assert states == {job_id: "CANCELED" for job_id in ids}
    assert_cancelled(cluster, ids)
    nothing_left_running()
