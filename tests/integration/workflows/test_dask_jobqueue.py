"""dask-jobqueue driving the front ends: SGECluster (`qsub SCRIPT` with `#$ -N -l -e DIR/ -o
DIR/ -cwd -j y`, the id taken as the first number printed, `qdel ID`) and SLURMCluster
(`sbatch SCRIPT` with `#SBATCH -J -e -o … -n 1 --cpus-per-task --mem -t`, `scancel ID`). Its
workers are batch jobs that connect back to the scheduler in the tool's process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.workflow_runs import assert_cancelled, interrupt_dask
from tests.helpers.workflow_runs import run_dask as run_workflow
from tests.helpers.workflow_tools import ToolEnv

pytestmark = pytest.mark.timeout(240)


@pytest.mark.parametrize("kind", ["sge", "slurm"])
def test_a_dask_jobqueue_workflow_runs_on_worker_jobs_and_reports_the_failed_task(
        cluster: LocalCluster, front_ends: Path, dask_env: ToolEnv, kind: str) -> None:
    logs = cluster.workdir / "logs"
    summary = run_workflow(cluster, front_ends, dask_env, kind, logs)
    assert summary["total"] == sum(i * i for i in range(5))
    assert summary["failure"] == "task 7 fails on purpose"
    assert summary["hosts"] == ["127.0.0.1"]
    ids = summary["jobs"]
    assert isinstance(ids, list) and len(ids) == 2
    for job_id in ids:
        job = cluster.client().job(int(job_id))
        # 1 core, 1 GiB (SGE: -l h_vmem=1G; Slurm: --mem=1024M), 5 minutes (-l h_rt / -t 00:05:00)
        assert (job.name, job.cpus, job.memory_mib, job.time_limit_s) == ("dask-worker", 1, 1024, 300)
        assert job.state == "cancelled"  # closed by the tool on leaving its `with` block
    if kind == "sge":  # `-o DIR/ -e DIR/ -j y`: one file per job, NAME.oJOBID, in the directory
        assert sorted(path.name for path in logs.iterdir()) == sorted(f"dask-worker.o{i}" for i in ids)


def test_slurm_worker_logs_are_named_by_slurms_percent_j(
        cluster: LocalCluster, front_ends: Path, dask_env: ToolEnv) -> None:
    logs = cluster.workdir / "logs"
    summary = run_workflow(cluster, front_ends, dask_env, "slurm", logs)
    expected = sorted(f"dask-worker-{i}.{ext}" for i in summary["jobs"] for ext in ("err", "out"))
    assert sorted(path.name for path in logs.iterdir()) == expected


@pytest.mark.parametrize("kind", ["sge", "slurm"])
def test_interrupting_a_dask_jobqueue_workflow_cancels_its_worker_jobs(
        cluster: LocalCluster, front_ends: Path, dask_env: ToolEnv, kind: str,
        nothing_left_running: Callable[[], None]) -> None:
    assert_cancelled(cluster, interrupt_dask(cluster, front_ends, dask_env, kind))
    nothing_left_running()
