"""PSI/J (psij-python) driving the Slurm front ends: `sbatch FILE` whose directives carry
double-quoted values (`--job-name="n"`, `--chdir="d"`), `--mem=<kB>K`, `--time=H:M:S` unpadded,
`-o/-e /dev/null`; in the job `scontrol show hostnames` for its node file; its states from
`squeue -O JobArrayID,StateCompact,Reason -t all --me`, and `scancel -Q ID` to cancel."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.workflow_runs import assert_cancelled, interrupt_psij
from tests.helpers.workflow_runs import run_psij as run_workflow
from tests.helpers.workflow_tools import ToolEnv

pytestmark = pytest.mark.timeout(240)


def test_a_psij_workflow_runs_its_steps_with_resources_and_reports_the_failed_one(
        cluster: LocalCluster, front_ends: Path, psij_env: ToolEnv) -> None:
    work = cluster.workdir / "psij"
    summary = run_workflow(cluster, front_ends, psij_env, work)
    assert [(step["state"], step["exit_code"]) for step in summary.values()] == [
        ("COMPLETED", 0), ("COMPLETED", 0), ("FAILED", 3)]
    produced = summary["produce"]["id"]
    assert (work / "consumed.txt").read_text() == f"{produced}\n{produced}\n"
    assert (work / "cpus.txt").read_text() == "2\n"  # the CPUs the step was given
    assert (work / "broken.err").read_text() == "this step fails on purpose\n"
    job = cluster.client().job(int(produced))
    assert (job.cpus, job.memory_mib, job.time_limit_s) == (2, 512, 300)  # --mem=524288K --time=0:5:0
    # PSI/J's script records the step's exit code in a file and itself ends well: the batch job
    # completes, as on Slurm, and PSI/J reads the failure from that file.
    assert cluster.client().job(int(summary["broken"]["id"])).state == "completed"


def test_psij_jobs_node_file_and_name_are_slurms(
        cluster: LocalCluster, front_ends: Path, psij_env: ToolEnv) -> None:
    work = cluster.workdir / "psij"
    summary = run_workflow(cluster, front_ends, psij_env, work)
    assert (work / "nodes.txt").read_text() == cluster.client().nodes()[0].name + "\n"
    # PSI/J names no job: Slurm then names it after the script file, <native id>.job here.
    scripts = {path.name for path in (work / ".psij" / "slurm").glob("*.job")}
    assert cluster.client().job(int(summary["produce"]["id"])).name in scripts


def test_interrupting_a_psij_script_cancels_its_jobs(
        cluster: LocalCluster, front_ends: Path, psij_env: ToolEnv,
        nothing_left_running: Callable[[], None]) -> None:
    ids, states = interrupt_psij(cluster, front_ends, psij_env)
    assert set(states) == set(ids)
    assert_cancelled(cluster, ids)
    nothing_left_running()


def test_psij_sees_its_cancelled_jobs_as_canceled(
        cluster: LocalCluster, front_ends: Path, psij_env: ToolEnv) -> None:
    ids, states = interrupt_psij(cluster, front_ends, psij_env)
    assert states == {job_id: "CANCELED" for job_id in ids}
