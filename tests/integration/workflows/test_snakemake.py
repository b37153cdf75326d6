"""snakemake with its Slurm executor plugin driving the front ends: `sinfo -o %P` for the default
partition, `sbatch --parsable … --wrap=…` per rule, `sacct -X --parsable2 --clusters all
--noheader --format=JobIdRaw,State --starttime … --endtime now --name RUN` for every job's state,
inside each job `srun -n1 --cpu-bind=q --cpus-per-task=N`, and `scancel IDS` on Ctrl-C."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.snakemake_rounds import HeldStatus
from tests.helpers.wait import wait_until
from tests.helpers.workflow_tools import DRIVERS, ToolEnv

pytestmark = pytest.mark.timeout(240)

SUBMITTED = r"has been submitted with SLURM jobid (\d+) \(log: \S*/rule_(\w+)/"


def snakemake(env: ToolEnv, *targets: str) -> list[str]:
    # The status checks start after 1 s instead of the plugin's 40 s, so the test stays short;
    # everything snakemake sends to the front ends is as on a real cluster.
    return [str(env.bin / "snakemake"), "--executor", "slurm", "--jobs", "3", "--keep-going",
            "--latency-wait", "5", "--slurm-init-seconds-before-status-checks", "1", "--nocolor", *targets]


def project(cluster: LocalCluster) -> Path:
    directory = cluster.workdir / "project"
    directory.mkdir()
    shutil.copy(DRIVERS / "snakemake" / "Snakefile", directory / "Snakefile")
    return directory


def test_a_snakemake_workflow_runs_its_rules_as_jobs_and_reports_the_failed_rule(
        cluster: LocalCluster, front_ends: Path, snakemake_env: ToolEnv) -> None:
    directory = project(cluster)
    run = snakemake_env.start(snakemake(snakemake_env), cluster, front_ends, cwd=directory)
    status, out = run.finish(timeout=90)  # about 40 s where the front ends serve it
    assert status == 1, out  # with --keep-going: what could run ran, and the failure is reported
    jobs = {rule: int(job_id) for job_id, rule in re.findall(SUBMITTED, out)}
    assert set(jobs) == {"greet", "shout", "broken"}, out
    assert (directory / "shout.txt").read_text() == f"HELLO FROM {jobs['greet']}\ncpus=2\n"
    assert not (directory / "broken.txt").exists()
    assert re.search(r"Error in rule broken:", out) and str(jobs["broken"]) in out, out
    client = cluster.client()
    for rule, cpus, memory in (("greet", 1, 500), ("shout", 2, 600), ("broken", 1, 400)):
        job = client.job(jobs[rule])
        assert (job.cpus, job.memory_mib, job.time_limit_s) == (cpus, memory, 300), rule
    assert client.job(jobs["broken"]).state == "failed"
    assert client.job(jobs["shout"]).state == "completed"


def held_status_queries(front_ends: Path) -> HeldStatus:
    """sacct held at the end of each status query of a run (`--name RUN`) until the test ends
    the round; its other calls pass through."""
    real = front_ends / "sacct.real"
    (front_ends / "sacct").rename(real)
    return HeldStatus(front_ends / "sacct", real, front_ends.parent, only_if="--name")


def test_interrupting_snakemake_cancels_the_jobs_it_submitted(
        cluster: LocalCluster, front_ends: Path, snakemake_env: ToolEnv,
        nothing_left_running: Callable[[], None]) -> None:
    directory = project(cluster)
    rounds = held_status_queries(front_ends)
    run = snakemake_env.start(snakemake(snakemake_env, "long.txt"), cluster, front_ends, cwd=directory)
    try:
        job_id = int(run.wait_for(SUBMITTED).group(1))
        # Snakemake prints that line before it takes the job for one to cancel on an interrupt:
        # its executor's event loop does that when it next wakes, for its first status query
        # (after --slurm-init-seconds-before-status-checks). Interrupted before, it has nothing
        # to cancel; during the query, the Ctrl-C ends the query too. So the first round ends
        # when the test says, and the Ctrl-C lands before the next one (the plugin's loop asleep
        # for 1 s, plus 10 when no job ended): tests/helpers/snakemake_rounds.py says why then
        rounds.end_round(run.process.pid)
        status, out = run.interrupt()
    finally:
        run.stop()
    assert status not in (None, 0), out  # snakemake stops, reporting the interruption
    # scancel asks; the job is cancelled once its node has ended it
    wait_until(lambda: cluster.client().job(job_id).state == "cancelled", describe=f"job {job_id} cancelled")
    assert not (directory / "long.txt").exists()
    nothing_left_running()
