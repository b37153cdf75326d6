"""The tools that speak LSF, unchanged, on the LSF front ends (installed by `drover compat
install` in every flavour): dask-jobqueue's LSFCluster (`bsub < SCRIPT` with `#BSUB -J -e -o -n
-M KB -W HH:MM`, the id read as the first number bsub prints, `bkill ID`); parsl's LSFProvider
(`bsub SCRIPT`, its `#BSUB` lines read, the id as the second word of bsub's line, `bjobs
-noheader -o 'jobid stat' IDS`, `bkill IDS`); PSI/J's lsf executor (`bsub SCRIPT` with `#BSUB -J
-cwd -env all -n -M NKB -W H:M -e /dev/null -o /dev/null`, `$LSB_JOBID` and `$LSB_HOSTS` in the
job, `bjobs -o "JOBID STAT EXIT_REASON KILL_REASON SUSPEND_REASON" -json -a IDS`, `bkill ID`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.workflow_runs import (
    assert_cancelled,
    interrupt_dask,
    interrupt_parsl,
    interrupt_psij,
    run_dask,
    run_parsl,
    run_psij,
)
from tests.helpers.workflow_tools import ToolEnv

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


def test_psij_lsf_executor_runs_jobs_and_reports_the_failed_ones_exit_code(
        cluster: LocalCluster, front_ends: Path, psij_env: ToolEnv) -> None:
    work = cluster.workdir / "psij"
    summary = run_psij(cluster, front_ends, psij_env, work, "lsf")
    assert [(step["state"], step["exit_code"]) for step in summary.values()] == [
        ("COMPLETED", 0), ("COMPLETED", 0), ("FAILED", 3)]
    produced = summary["produce"]["id"]
    assert (work / "consumed.txt").read_text() == f"{produced}\n{produced}\n"  # $LSB_JOBID is bsub's id
    node = cluster.client().nodes()[0].name
    assert (work / "nodes.txt").read_text() == f"{node}\n"  # $LSB_HOSTS: one word per slot
    job = cluster.client().job(int(produced))
    # `bsub SCRIPT` with `#BSUB -cwd -env all -n 1 -M 524288KB -W 0:5 -e /dev/null -o /dev/null`
    assert (job.cpus, job.memory_mib, job.time_limit_s) == (1, 512, 300)
    assert cluster.client().job(int(summary["broken"]["id"])).state == "completed"  # its exit code is PSI/J's file's


def test_psij_cancels_its_lsf_jobs(cluster: LocalCluster, front_ends: Path, psij_env: ToolEnv,
                                   nothing_left_running: Callable[[], None]) -> None:
    ids, states = interrupt_psij(cluster, front_ends, psij_env, "lsf")
    # bkill'd jobs are EXIT in bjobs, which PSI/J's LSF executor reads as FAILED (it has no
    # cancelled state for LSF).
    assert states == {job_id: "FAILED" for job_id in ids}
    assert_cancelled(cluster, ids)
    nothing_left_running()


def test_interrupting_dask_jobqueue_on_lsf_bkills_its_worker_jobs(
        cluster: LocalCluster, front_ends: Path, dask_env: ToolEnv, nothing_left_running: Callable[[], None]) -> None:
    assert_cancelled(cluster, interrupt_dask(cluster, front_ends, dask_env, "lsf"))
    nothing_left_running()


def test_interrupting_parsl_on_lsf_bkills_its_block(
        cluster: LocalCluster, front_ends: Path, parsl_env: ToolEnv, nothing_left_running: Callable[[], None]) -> None:
    assert_cancelled(cluster, [interrupt_parsl(cluster, front_ends, parsl_env, "lsf")])
    nothing_left_running()
