"""A script written for Grid Engine, through qsub, qstat, qhold, qrls, qdel and qacct: the same
file names and outputs as on Grid Engine."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until

SCRIPT = """#!/bin/bash
#$ -N sweep
#$ -cwd
#$ -t 1-3
#$ -l h_rt=0:05:00,h_vmem=64M
echo "task $SGE_TASK_ID of $JOB_ID ($JOB_NAME) on $NSLOTS slot"
echo "to stderr" >&2
"""


def test_a_grid_engine_array_script_runs_with_its_file_names(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    (cluster.workdir / "sweep.sh").write_text(SCRIPT)
    submitted = run(cluster, bin_dir, "qsub", "-terse", "sweep.sh")
    assert submitted.returncode == 0, submitted.stderr
    label = submitted.stdout.strip()
    job = label.split(".")[0]
    assert label == f"{job}.1-3:1"
    cluster.drover("wait", job)
    for task in (1, 2, 3):
        assert (cluster.workdir / f"sweep.o{job}.{task}").read_text() == f"task {task} of {job} (sweep) on 1 slot\n"
        assert (cluster.workdir / f"sweep.e{job}.{task}").read_text() == "to stderr\n"
    accounting = run(cluster, bin_dir, "qacct", "-j", job).stdout
    assert accounting.count("exit_status  0") == 3 and "jobname      sweep" in accounting
    gone = run(cluster, bin_dir, "qstat", "-j", job)
    assert gone.returncode == 1 and "Following jobs do not exist" in gone.stderr


def test_plain_messages_sync_hold_release_delete_and_the_error_state(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    plain = run(cluster, bin_dir, "qsub", "-cwd", "-N", "hello", "-b", "y", "echo", "hi")
    assert plain.stdout.startswith('Your job ') and plain.stdout.rstrip().endswith('("hello") has been submitted')
    # -b y joins the command's words for the shell, as Grid Engine's shepherd does.
    synced = run(cluster, bin_dir, "qsub", "-cwd", "-sync", "y", "-j", "y", "-b", "y", "exit 4")
    assert synced.returncode == 4 and synced.stdout.splitlines()[-1].endswith("exited with exit code 4.")
    held = run(cluster, bin_dir, "qsub", "-terse", "-cwd", "-h", "-b", "y", "true").stdout.strip()
    erring = run(cluster, bin_dir, "qsub", "-terse", "-cwd", "-N", "err", "-b", "y", "exit 100").stdout.strip()
    wait_until(lambda: cluster.drover_json("show", erring)["state"] == "held", describe="the error state")
    table = run(cluster, bin_dir, "qstat").stdout
    assert table.startswith("job-ID")
    states = {line.split()[0]: line.split()[4] for line in table.splitlines()[2:]}
    assert states[held] == "hqw" and states[erring] == "Eqw"
    assert run(cluster, bin_dir, "qalter", "-p", "-5", held).stdout == f"modified priority of job {held}\n"
    assert cluster.drover_json("show", held)["priority"] == -5
    assert "modified hold" in run(cluster, bin_dir, "qrls", held).stdout
    cluster.drover("wait", held)
    deleted = run(cluster, bin_dir, "qdel", erring, "999999")
    assert f"has deleted job {erring}" in deleted.stdout  # it was waiting (in error), not running
    assert deleted.returncode == 1 and 'job "999999" does not exist' in deleted.stderr
