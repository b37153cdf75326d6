"""The tools that speak LSF, unchanged, on the LSF front ends (installed by `drover compat
install` in every flavour): dask-jobqueue's LSFCluster (`bsub < SCRIPT` with `#BSUB -J -e -o -n
-M KB -W HH:MM`, the id read as the first number bsub prints, `bkill ID`); parsl's LSFProvider
(`bsub SCRIPT`, its `#BSUB` lines read, the id as the second word of bsub's line, `bjobs
-noheader -o 'jobid stat' IDS`, `bkill IDS`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.workflow_tools import ToolEnv
from tests.integration.workflows.test_dask_jobqueue import run_workflow as run_dask
from tests.integration.workflows.test_pbs_clients import run_parsl

pytestmark = pytest.mark.timeout(240)


def test_dask_jobqueue_lsfcluster_scales_to_two_workers_and_computes(
        cluster: LocalCluster, front_ends: Path, dask_env: ToolEnv) -> None:
    logs = cluster.workdir / "logs"
    summary = run_dask(cluster, front_ends, dask_env, "lsf", logs)
    assert summary["total"] == sum(i * i for i in range(5))
    assert summary["failure"] == "task 7 fails on purpose"
    ids = summary["jobs"]
    assert isinstance(ids, list) and len(ids) == 2
    for job_id in ids:
        job = cluster.client().job(int(job_id))
        # -n 1; -M 1073742: 1 GiB in the decimal KB dask-jobqueue writes, which LSF reads as
        # KiB (1049 MiB); -W 00:05
        assert (job.name, job.cpus, job.memory_mib, job.time_limit_s) == ("dask-worker", 1, 1049, 300)
        assert job.state == "cancelled"  # bkill'd by the tool on leaving its `with` block
    # `-e DIR/WORKER-%J.err -o DIR/WORKER-%J.out`, WORKER the name dask gave the worker
    assert sorted(p.name.rsplit("-", 1)[1] for p in logs.iterdir()) == sorted(
        f"{i}.{kind}" for i in ids for kind in ("err", "out"))


def test_a_parsl_app_runs_in_an_lsf_block_read_back_through_bjobs(
        cluster: LocalCluster, front_ends: Path, parsl_env: ToolEnv) -> None:
    summary = run_parsl(cluster, front_ends, parsl_env, "lsf")
    assert summary["total"] == 1 + 2 + 3 + 4
    assert summary["failure"] == "BashExitFailure: bash_app fails failed with unix exit code 3"
    assert summary["block_states"] == ["RUNNING"]  # RUN, through `bjobs -noheader -o 'jobid stat' ID`
    (block,) = summary["blocks"]  # `Job <N> is submitted to default queue <normal>.`: its second word
    job = cluster.client().job(int(block))
    # `bsub SCRIPT` with `#BSUB -n 2 -R "span[ptile=2]" -M 1GB -W 5`: its #BSUB lines are read
    assert (job.cpus, job.memory_mib, job.time_limit_s) == (2, 1024, 300)
    assert job.state == "cancelled"  # bkill'd on leaving `with parsl.load(...)`
