"""The environment a job PBS's qsub submitted sees, read from inside it: PBS Pro's and Torque's
variables with the job's own values, $PBS_NODEFILE listing its host once per CPU; and a job
submitted otherwise (sbatch) gets none of them, so an MPI library does not take it for PBS's."""

from __future__ import annotations

import socket

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.integration.compat.test_job_environment import read_environment

SERVER = socket.gethostname().split(".")[0]

SCRIPT = """#!/bin/bash
#PBS -N envjob
#PBS -l select=1:ncpus=2:mem=32mb
#PBS -J 1-2
cd "$PBS_O_WORKDIR"
env -0 > env.$PBS_ARRAY_INDEX
cat "$PBS_NODEFILE" > nodes.$PBS_ARRAY_INDEX
pwd -P > pwd.$PBS_ARRAY_INDEX
"""


def test_a_pbs_array_subjob_sees_pbs_variables_and_its_node_file(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    (cluster.workdir / "env.sh").write_text(SCRIPT)
    done = run(cluster, bin_dir, "qsub", "env.sh")
    assert done.returncode == 0, done.stderr
    job = done.stdout.split("[")[0]
    cluster.drover("wait", job)
    node = cluster.drover_json("nodes")[0]["name"]
    for index in ("1", "2"):
        env = read_environment(cluster.workdir / f"env.{index}")
        assert env["PBS_JOBID"] == f"{job}[{index}].{SERVER}" and env["PBS_ARRAY_ID"] == f"{job}[].{SERVER}"
        assert env["PBS_ARRAY_INDEX"] == env["PBS_ARRAYID"] == index
        assert (env["PBS_JOBNAME"], env["PBS_QUEUE"], env["PBS_ENVIRONMENT"]) == ("envjob", "workq", "PBS_BATCH")
        assert env["PBS_O_WORKDIR"] == str(cluster.workdir) and env["PBS_O_HOST"] == socket.gethostname()
        assert env["NCPUS"] == env["OMP_NUM_THREADS"] == "2"
        assert env["TMPDIR"] and env["PBS_NODEFILE"].startswith(env["TMPDIR"] + "/")
        assert (cluster.workdir / f"nodes.{index}").read_text() == f"{node}\n{node}\n"  # once per CPU


def test_a_job_not_submitted_by_pbs_qsub_has_no_pbs_variables(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    done = run(cluster, bin_dir, "sbatch", "--parsable", "--wrap", "env -0 > env.slurm")
    assert done.returncode == 0, done.stderr
    cluster.drover("wait", done.stdout.strip())
    env = read_environment(cluster.workdir / "env.slurm")
    assert env["SLURM_JOB_ID"] == done.stdout.strip()
    assert not [name for name in env if name.startswith("PBS_")] and "NCPUS" not in env
