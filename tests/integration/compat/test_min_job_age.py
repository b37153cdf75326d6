"""Slurm's MinJobAge, set for the cluster in drover.toml ([compat] min_job_age_s): an ended job is
shown by squeue and scontrol for that long, then forgotten by them as Slurm forgets it, and
`scontrol show config` says the setting."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until

AGE_S = 3


@pytest.fixture
def short_memory() -> Iterator[LocalCluster]:
    local = LocalCluster(config_toml=f"[compat]\nmin_job_age_s = {AGE_S}\n")
    try:
        local.start()
        yield local
    finally:
        print(local.logs())
        problems = local.stop()
        assert not problems, problems


def test_an_ended_job_is_shown_for_min_job_age_then_forgotten(short_memory: LocalCluster) -> None:
    cluster = short_memory
    bin_dir = install(cluster)
    config = run(cluster, bin_dir, "scontrol", "show", "config").stdout
    assert f"\nMinJobAge               = {AGE_S} sec\n" in config
    job = run(cluster, bin_dir, "sbatch", "--parsable", "--wrap", "true").stdout.strip()
    cluster.drover("wait", job)
    ended = time.time()
    shown = run(cluster, bin_dir, "squeue", "-h", "-t", "all", "-j", job, "-o", "%i %T").stdout
    assert shown == f"{job} COMPLETED\n"
    assert f"JobId={job} " in run(cluster, bin_dir, "scontrol", "show", "job", job).stdout
    wait_until(lambda: time.time() - ended > AGE_S + 1, timeout=AGE_S + 5, describe="MinJobAge to pass")
    gone = run(cluster, bin_dir, "squeue", "-h", "-t", "all", "-j", job)
    assert (gone.returncode, gone.stderr) == (1, "slurm_load_jobs error: Invalid job id specified\n")
    assert run(cluster, bin_dir, "squeue", "-h", "-t", "all").stdout == ""
    forgotten = run(cluster, bin_dir, "scontrol", "show", "job", job)
    assert forgotten.returncode == 1 and "Invalid job id specified" in forgotten.stderr
