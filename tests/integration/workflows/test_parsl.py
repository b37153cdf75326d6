"""parsl driving the front ends through its SlurmProvider (`sbatch FILE` parsed for
"Submitted batch job N", `sacct -X --noheader --format=jobid,state%20 --job 'IDS'`, `scancel
IDS`) and its GridEngineProvider (`qsub -terse FILE` with `#$` directives, plain `qstat` read
by column, `qdel IDS`), all run through a shell as parsl runs them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.workflow_runs import assert_cancelled, interrupt_parsl
from tests.helpers.workflow_runs import run_parsl as run_workflow
from tests.helpers.workflow_tools import ToolEnv

pytestmark = pytest.mark.timeout(240)

PROVIDERS = ["slurm", "gridengine"]


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_parsl_workflow_runs_in_a_block_with_resources_and_reports_the_failed_app(
        cluster: LocalCluster, front_ends: Path, parsl_env: ToolEnv, kind: str) -> None:
    summary = run_workflow(cluster, front_ends, parsl_env, kind)
    assert summary["total"] == 1 + 2 + 3 + 4
    assert summary["failure"] == "BashExitFailure: bash_app fails failed with unix exit code 3"
    blocks = summary["blocks"]
    assert isinstance(blocks, list) and len(blocks) == 1
    block = cluster.client().job(int(blocks[0]))
    # 2 CPUs (--cpus-per-task=2, or -pe smp 2) for 5 minutes (--time=5, or -l h_rt=00:05:00);
    # cancelled by parsl's cleanup at the end.
    assert (block.cpus, block.time_limit_s) == (2, 300)
    assert block.state == "cancelled"


@pytest.mark.parametrize("kind", ["slurm", "gridengine"])
def test_parsl_reads_its_running_block_back_from_the_scheduler(
        cluster: LocalCluster, front_ends: Path, parsl_env: ToolEnv, kind: str) -> None:
    summary = run_workflow(cluster, front_ends, parsl_env, kind)
    assert summary["block_states"] == ["RUNNING"]
    block = cluster.client().job(int(summary["blocks"][0]))
    # 1 GiB: --mem=1g is per node; Grid Engine's h_vmem is per slot, 512M x 2 slots.
    assert block.memory_mib == 1024
    name = block.name
    # Slurm: the --job-name parsl gives; Grid Engine: no -N, so the script file's name.
    assert name.startswith("parsl.htex.block-0.")
    assert name.endswith(".submit") == (kind == "gridengine")


@pytest.mark.parametrize("kind", PROVIDERS)
def test_interrupting_a_parsl_workflow_cancels_its_blocks(
        cluster: LocalCluster, front_ends: Path, parsl_env: ToolEnv, kind: str,
        nothing_left_running: Callable[[], None]) -> None:
    assert_cancelled(cluster, [interrupt_parsl(cluster, front_ends, parsl_env, kind)])
    nothing_left_running()
