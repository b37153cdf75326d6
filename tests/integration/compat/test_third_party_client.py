"""A real third-party program that drives Slurm's commands: submitit (from PyPI) submits a
Python function through sbatch, its script calls srun, and it reads states with sacct."""

from __future__ import annotations

import operator
import os
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install


def test_submitit_runs_a_function_through_the_slurm_front_ends(cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    submitit = pytest.importorskip("submitit", reason="submitit is installed by the test extras")
    bin_dir = install(cluster)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("DROVER_STATE_DIR", str(cluster.state_dir))
    monkeypatch.chdir(cluster.workdir)
    executor = submitit.SlurmExecutor(folder=str(tmp_path / "jobs"))
    executor.update_parameters(time=5, cpus_per_task=1)
    # A function the job can import by name (pickled by reference, as submitit does).
    job = executor.submit(operator.add, 2, 3)
    assert job.result() == 5
    jobs = executor.map_array(operator.add, [1, 2, 3], [10, 20, 30])
    assert [j.result() for j in jobs] == [11, 22, 33]
    for job_id in {job.job_id, jobs[0].job_id.split("_")[0]}:
        assert cluster.drover("wait", job_id).returncode == 0  # and Drover saw them all complete
