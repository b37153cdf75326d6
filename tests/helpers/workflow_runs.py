"""A workflow tool's driver run against one front end's commands, the same way whichever front end
it is (Slurm, Grid Engine, PBS, LSF, HTCondor: the driver's `kind`): to its end, returning the
summary it prints; or until it has submitted its jobs, then interrupted as a user's Ctrl-C."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers.cluster import LocalCluster
from tests.helpers.workflow_tools import ToolEnv, ToolRun


def printed(out: str, prefix: str) -> str:
    """The rest of the first line of `out` that starts with `prefix`."""
    return next(line for line in out.splitlines() if line.startswith(prefix))[len(prefix):]


def summary(run: ToolRun, timeout: float) -> dict[str, Any]:
    """Wait for the driver to end well; its `SUMMARY {json}` line."""
    status, out = run.finish(timeout=timeout)
    assert status == 0, out
    summarised: dict[str, Any] = json.loads(printed(out, "SUMMARY "))
    return summarised


def run_dask(cluster: LocalCluster, front_ends: Path, dask_env: ToolEnv, kind: str, log_dir: Path) -> dict[str, Any]:
    return summary(dask_env.start(dask_env.driver("dask_workflow.py", kind, str(log_dir)), cluster, front_ends), 180)


def run_parsl(cluster: LocalCluster, front_ends: Path, parsl_env: ToolEnv, kind: str) -> dict[str, Any]:
    run = parsl_env.start(parsl_env.driver("parsl_workflow.py", kind, str(cluster.workdir / "runinfo")),
                          cluster, front_ends)
    return summary(run, 150)


def run_psij(cluster: LocalCluster, front_ends: Path, psij_env: ToolEnv, work: Path,
             kind: str = "slurm") -> dict[str, Any]:
    run = psij_env.start(psij_env.driver("psij_workflow.py", str(work), "workflow", kind), cluster, front_ends)
    return summary(run, 180)


def interrupt(env: ToolEnv, argv: list[str], cluster: LocalCluster, front_ends: Path, submitted: int,
              whole_group: bool = True) -> tuple[list[str], int | None, str]:
    """Start the driver, wait for its `SUBMITTED IDS` line naming `submitted` jobs, then press
    Ctrl-C (see ToolRun.interrupt for `whole_group`): the ids, the tool's exit status and output."""
    run = env.start(argv, cluster, front_ends)
    try:
        ids = run.wait_for_line("SUBMITTED ").split()
        assert len(ids) == submitted
        status, out = run.interrupt(whole_group=whole_group)
    finally:
        run.stop()
    return ids, status, out


def interrupt_dask(cluster: LocalCluster, front_ends: Path, dask_env: ToolEnv, kind: str) -> list[str]:
    """Ctrl-C dask-jobqueue's cluster once it has submitted its two workers: their ids."""
    argv = dask_env.driver("dask_workflow.py", kind, str(cluster.workdir / "logs"), "interrupt")
    ids, status, out = interrupt(dask_env, argv, cluster, front_ends, 2)
    assert status is not None, out  # the tool ended by itself after Ctrl-C
    return ids


def interrupt_parsl(cluster: LocalCluster, front_ends: Path, parsl_env: ToolEnv, kind: str) -> str:
    """Interrupt parsl once it has submitted its block: the block's id."""
    argv = parsl_env.driver("parsl_workflow.py", kind, str(cluster.workdir / "runinfo"), "interrupt")
    # SIGINT to parsl's main process only: a terminal's Ctrl-C would also kill parsl's
    # interchange process, and parsl's cleanup then waits for it forever (a parsl matter).
    (block,), status, out = interrupt(parsl_env, argv, cluster, front_ends, 1, whole_group=False)
    assert status == -2 and "KeyboardInterrupt" in out, out  # Python ends itself by SIGINT
    return block


def interrupt_psij(cluster: LocalCluster, front_ends: Path, psij_env: ToolEnv,
                   kind: str = "slurm") -> tuple[list[str], dict[str, str]]:
    """Ctrl-C a PSI/J script waiting on two long jobs; return their ids and the states PSI/J
    reported for them after cancelling."""
    argv = psij_env.driver("psij_workflow.py", str(cluster.workdir / "psij"), "interrupt", kind)
    ids, status, out = interrupt(psij_env, argv, cluster, front_ends, 2)
    assert status == 130, out
    states: dict[str, str] = json.loads(printed(out, "CANCELLED "))
    return ids, states


def assert_cancelled(cluster: LocalCluster, ids: list[str]) -> None:
    """Each job is cancelled in Drover (an id as the front end prints it: `12`, `12.server`)."""
    for job_id in ids:
        assert cluster.client().job(int(job_id.split(".")[0])).state == "cancelled"
