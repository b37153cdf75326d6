"""submitit (Slurm) driving the front ends: its sbatch scripts (every parameter as a long
`#SBATCH --key=value`, `--signal`, `--open-mode`, `--wckey`), `srun --unbuffered --output …%j_%t…`
inside the batch step, its status from `sacct -o JobID,State,NodeList --parsable2 -j … -j …`,
and `scancel ID` on cancel."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.workflow_tools import ToolEnv

pytestmark = pytest.mark.timeout(240)


def test_a_submitit_workflow_runs_with_resources_and_reports_the_failed_step(
        cluster: LocalCluster, front_ends: Path, submitit_env: ToolEnv) -> None:
    folder = cluster.workdir / "submitit"
    run = submitit_env.start(submitit_env.driver("submitit_workflow.py", str(folder)), cluster, front_ends)
    status, out = run.finish(timeout=180)
    assert status == 0, out
    summary = json.loads(next(line for line in out.splitlines() if line.startswith("SUMMARY "))[8:])
    prepared = summary["prepared"]
    assert prepared["values"] == [1, 2, 3]
    assert prepared["cpus"] == "2" and prepared["ntasks"] == 1  # what the step saw of its allocation
    assert prepared["nodes"] == [cluster.client().nodes()[0].name]
    assert summary["squares"] == [1, 4, 9]
    array_id = summary["square_ids"][0].split("_")[0]
    assert summary["square_ids"] == [f"{array_id}_{i}" for i in range(3)]
    assert summary["failure"] == "Job (task=0) failed during processing with trace:"
    assert summary["failed_state"] == "FAILED"  # from sacct, as submitit reads it
    job = cluster.client().job(int(prepared["job_id"]))
    assert (job.cpus, job.memory_mib, job.time_limit_s) == (2, 1024, 300)
    assert cluster.client().job(int(summary["failed_id"])).state == "failed"
    # submitit's own log files, named by the %j/%A_%a/%t patterns it gave sbatch and srun
    assert (folder / f"{prepared['job_id']}_0_log.out").exists()
    assert (folder / f"{array_id}_2_0_log.out").exists()


def test_interrupting_a_submitit_script_cancels_every_job_it_submitted(
        cluster: LocalCluster, front_ends: Path, submitit_env: ToolEnv,
        nothing_left_running: Callable[[], None]) -> None:
    run = submitit_env.start(submitit_env.driver("submitit_interrupt.py", str(cluster.workdir / "submitit")),
                             cluster, front_ends)
    try:
        ids = run.wait_for_line("SUBMITTED ").split()
        assert len(ids) == 3
        status, out = run.interrupt()
    finally:
        run.stop()
    assert status == 130, out
    cancelled = [line for line in out.splitlines() if line.startswith("CANCELLED ")]
    assert cancelled, out  # the driver says what Slurm reported after its cancels
    states = json.loads(cancelled[0][10:])
    assert set(states) == set(ids)
    assert all(state.startswith("CANCELLED") for state in states.values()), states
    nothing_left_running()
