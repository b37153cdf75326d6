"""The exact command lines workflow tools send to Grid Engine's commands, and the parsing they do
of what comes back (Toil's GridEngineBatchSystem, dask-jobqueue's SGECluster, parsl's
GridEngineProvider), run against Drover's front ends."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until


def _qstat_rows(cluster: LocalCluster, bin_dir: Path, *args: str) -> dict[str, list[str]]:
    """parsl's and Toil's parse of the plain table: header and rule skipped, column 5 the state."""
    rows = {}
    for line in run(cluster, bin_dir, "qstat", *args).stdout.splitlines():
        parts = line.split()
        if not parts or parts[0].lower() == "job-id" or parts[0].startswith("---"):
            continue
        rows[parts[0]] = parts
    return rows


def test_toils_submission_status_exit_code_and_kill(cluster: LocalCluster) -> None:
    """1. qsub -V -b y -terse ... with a command, as Toil builds it; the id is the first line.
    2. While it runs, qstat's row has `r` in column 5 and a start time Toil can parse.
    3. Once it ends, `qstat -j` fails with "Following jobs do not exist" and qacct gives the
       exit status; a deleted job gets qdel's exit 0."""
    bin_dir = install(cluster)
    (cluster.workdir / "work.sh").write_text('touch started; while [ ! -e go ]; do sleep 0.05; done; exit "$1"\n')
    argv = ["qsub", "-V", "-b", "y", "-terse", "-j", "y", "-cwd", "-N", "toil_job_7", "-v", "TOIL_A=1,TOIL_B=two",
            "-hard", "-l", "vf=65536K,h_vmem=65536K", "-o", str(cluster.workdir / "toil_$JOB_ID.log"),
            "-e", str(cluster.workdir / "toil_$JOB_ID.err"), "sh", str(cluster.workdir / "work.sh"), "3"]
    submitted = run(cluster, bin_dir, *argv)
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.splitlines()[0].strip()
    assert job.isdigit()
    wait_until(lambda: (cluster.workdir / "started").exists(), describe="the job to start")
    row = _qstat_rows(cluster, bin_dir)[job]
    assert row[4] == "r" and row[2] == "toil_job_7"
    assert re.fullmatch(r"\d\d/\d\d/\d{4} \d\d:\d\d:\d\d", " ".join(row[5:7]))
    assert run(cluster, bin_dir, "qstat", "-j", job).returncode == 0
    (cluster.workdir / "go").write_text("")
    cluster.drover("wait", job, check=False)
    gone = run(cluster, bin_dir, "qstat", "-j", job)
    assert gone.returncode != 0 and "Following jobs do not exist" in gone.stderr
    accounting = {line.split()[0]: line.split()[1] for line in run(cluster, bin_dir, "qacct", "-j", job).stdout
                  .splitlines() if line.startswith(("failed", "exit_status"))}
    assert accounting == {"failed": "0", "exit_status": "3"}
    assert (cluster.workdir / f"toil_{job}.log").exists()

    sleeper = run(cluster, bin_dir, "qsub", "-V", "-b", "y", "-terse", "-j", "y", "-cwd", "-N", "toil_job_8",
                  "sleep", "60").stdout.splitlines()[0]
    wait_until(lambda: _qstat_rows(cluster, bin_dir).get(sleeper, ["", "", "", "", ""])[4] == "r",
               describe="the sleeper to run")
    deleted = run(cluster, bin_dir, "qdel", sleeper)
    assert deleted.returncode == 0 and f"has registered the job {sleeper} for deletion" in deleted.stdout
    cluster.drover("wait", sleeper, check=False)
    failed = run(cluster, bin_dir, "qacct", "-j", sleeper).stdout
    assert re.search(r"^failed\s+100 : assumedly after job$", failed, re.M), failed
    assert re.search(r"^exit_status\s+1[34]\d\s*$", failed, re.M), failed  # 128 + the signal


DASK_SCRIPT = """#!/usr/bin/env bash

#$ -N dask-worker
#$ -l h_vmem=1G,m_mem_free=1G
#$ -l h_rt=00:30:00
#$ -e {logs}/
#$ -o {logs}/
#$ -cwd
#$ -j y
#$ -pe smp 1

echo "worker $JOB_ID $JOB_NAME $NSLOTS"
"""


def test_dask_jobqueues_sge_header_and_first_number(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    logs = cluster.workdir / "logs"
    logs.mkdir()
    (cluster.workdir / "worker.sh").write_text(DASK_SCRIPT.format(logs=logs))
    submitted = run(cluster, bin_dir, "qsub", "worker.sh")
    assert submitted.returncode == 0, submitted.stderr
    job = re.search(r"(?P<job_id>\d+)", submitted.stdout)
    assert job and submitted.stdout == f'Your job {job["job_id"]} ("dask-worker") has been submitted\n'
    cluster.drover("wait", job["job_id"])
    assert (logs / f"dask-worker.o{job['job_id']}").read_text() == f"worker {job['job_id']} dask-worker 1\n"
    assert run(cluster, bin_dir, "qdel", job["job_id"]).returncode == 1  # ended: qdel says it does not exist


PARSL_SCRIPT = """#!/bin/bash
#$ -S /bin/bash
#$ -o {d}/parsl.sge.1.submit.stdout
#$ -e {d}/parsl.sge.1.submit.stderr
#$ -cwd
#$ -l h_rt=00:10:00
#$ -pe smp 2

export JOBNAME="parsl.sge.1"
touch {d}/started
while [ ! -e {d}/go ]; do sleep 0.05; done
echo "$JOBNAME on $NSLOTS"
"""


def test_parsls_terse_submission_status_table_and_cancel(cluster: LocalCluster) -> None:
    """parsl runs `qsub -terse FILE` and `qstat` through a shell; a job missing from the table
    has completed; `qdel ID ID` with exit 0 cancels."""
    bin_dir = install(cluster)
    script = cluster.workdir / "parsl.sge.1.submit"
    script.write_text(PARSL_SCRIPT.format(d=cluster.workdir))
    first = run(cluster, bin_dir, "qsub", "-terse", str(script)).stdout.splitlines()[0].strip()
    second = run(cluster, bin_dir, "qsub", "-q", "all.q", "-terse", str(script)).stdout.splitlines()[0].strip()
    wait_until(lambda: (cluster.workdir / "started").exists(), describe="a job to start")
    states = {job: row[4].lower() for job, row in _qstat_rows(cluster, bin_dir).items()}
    assert states[first] in ("r", "qw") and states[second] in ("r", "qw") and "r" in states.values()
    (cluster.workdir / "go").write_text("")
    cluster.drover("wait", first, second)
    assert first not in _qstat_rows(cluster, bin_dir)  # gone from the table: parsl takes it as completed
    assert (cluster.workdir / "parsl.sge.1.submit.stdout").read_text().startswith("parsl.sge.1 on 2")
    third = run(cluster, bin_dir, "qsub", "-terse", "-h", str(script)).stdout.strip()
    cancelled = run(cluster, bin_dir, "qdel", third)
    assert cancelled.returncode == 0 and f"has deleted job {third}" in cancelled.stdout


def test_an_interrupted_sync_submission_deletes_its_job(cluster: LocalCluster) -> None:
    """1. qsub -sync y waits for a job that runs until told.
    2. SIGTERM to qsub (a workflow manager stopping): qsub says so, deletes the job, exits 1."""
    import signal
    import subprocess

    bin_dir = install(cluster)
    waiting = subprocess.Popen([str(bin_dir / "qsub"), "-sync", "y", "-cwd", "-b", "y", "sleep 60"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cluster.env,
                               cwd=cluster.workdir)
    try:
        job = waiting.stdout.readline().split()[2]  # type: ignore[union-attr]
        wait_until(lambda: cluster.drover_json("show", job)["state"] == "running", describe="running")
        waiting.send_signal(signal.SIGTERM)
        _out, err = waiting.communicate(timeout=30)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait()
    assert waiting.returncode == 1 and "Interrupted!\nPlease wait while qsub shuts down." in err
    cluster.drover("wait", job, check=False)
    assert cluster.drover_json("show", job)["state"] == "cancelled"
