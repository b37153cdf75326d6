"""`drover run` and the front ends' interactive commands while their job waits: they say it waits
and why, and when it starts (as srun's "job N queued and waiting for resources"); Ctrl-C then
gives the job up (as srun's "Job allocation NNN has been revoked"), so nothing queued is left to
start later with nobody attached; and `drover run --help` is run's own."""

from __future__ import annotations

import os
import pty
import re
import signal
import subprocess
import sys

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.terminal import read_until
from tests.helpers.wait import wait_until


def _occupy(cluster: LocalCluster) -> int:
    """A job holding every CPU of the cluster's only node, once it runs: the next job queues."""
    blocker = cluster.submit("--cpus", str(cluster.cpus), "--", "sleep", "600")
    wait_until(lambda: cluster.client().job(blocker).state == "running", describe="the node to be busy")
    return blocker


def _the_waiting_job(cluster: LocalCluster, blocker: int) -> int:
    """The id of the job submitted after `blocker`, once it is there, pending."""
    jobs = wait_until(lambda: [j for j in cluster.client().jobs() if j.id != blocker],
                      describe="the job to be submitted")
    (job,) = jobs
    assert job.state == "pending", job
    return job.id


def _cancelled(cluster: LocalCluster, job_id: int) -> None:
    wait_until(lambda: cluster.client().job(job_id).state == "cancelled",
               describe=f"job {job_id} to be cancelled")


def _drover(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "drover", *args], capture_output=True, text=True, timeout=60)


def test_run_help_is_runs_own_and_exits_0() -> None:
    result = _drover("run", "--help")
    assert result.returncode == 0, result.stderr
    assert "drover run [OPTIONS] -- COMMAND..." in result.stdout
    assert "--pty" in result.stdout and "script file" not in result.stdout
    assert _drover("run", "-h").stdout == result.stdout
    assert _drover("run", "--cpus", "2", "--help").stdout == result.stdout


@pytest.mark.parametrize("command", [
    ["-m", "drover", "run", "--", "true"],
    ["-m", "drover.compat.slurm.srun", "true"],
    ["-m", "drover.compat.slurm.salloc", "true"],
    ["-m", "drover.compat.gridengine.qrsh", "-cwd", "true"],
], ids=["run", "srun", "salloc", "qrsh"])
def test_ctrl_c_while_queued_cancels_the_job(cluster: LocalCluster, command: list[str]) -> None:
    blocker = _occupy(cluster)
    process = subprocess.Popen([sys.executable, *command], env=cluster.env, cwd=cluster.workdir,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        job_id = _the_waiting_job(cluster, blocker)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    _cancelled(cluster, job_id)
    assert process.returncode != 0
    assert "Traceback" not in err
    if "salloc" in command[1] or "srun" in command[1]:
        assert f"Job allocation {job_id} has been revoked" in err, err


@pytest.mark.parametrize(("command", "queued", "started"), [
    (["-m", "drover", "run", "--", "true"], "drover: job {id} queued and waiting for resources (",
     "drover: job {id} started on node "),
    (["-m", "drover.compat.slurm.srun", "true"], "srun: job {id} queued and waiting for resources\n",
     "srun: job {id} has been allocated resources\n"),
    (["-m", "drover.compat.slurm.salloc", "true"],
     "salloc: Pending job allocation {id}\nsalloc: job {id} queued and waiting for resources\n",
     "salloc: job {id} has been allocated resources\nsalloc: Granted job allocation {id}\n"),
    (["-m", "drover.compat.gridengine.qrsh", "-cwd", "true"], "drover: job {id} queued and waiting for resources (",
     "drover: job {id} started on node "),
], ids=["run", "srun", "salloc", "qrsh"])
def test_a_queued_job_is_said_to_wait_and_why_then_to_start(cluster: LocalCluster, command: list[str],
                                                             queued: str, started: str) -> None:
    blocker = _occupy(cluster)
    reading, writing = os.pipe()
    process = subprocess.Popen([sys.executable, *command], env=cluster.env, cwd=cluster.workdir,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=writing)
    os.close(writing)
    try:
        job_id = _the_waiting_job(cluster, blocker)
        seen = read_until(reading, queued.format(id=job_id).encode())
        if seen.endswith(b"("):  # drover run's reason: the planner's, or that it has not planned it yet
            seen += read_until(reading, b")\n")
            reason = seen.split(b"waiting for resources (", 1)[1]
            assert reason == b"waiting for CPUs or memory to free up)\n" or reason.startswith(b"not planned yet"), seen
        assert b"started" not in seen and b"allocated" not in seen, seen
        cluster.drover("cancel", str(blocker))
        seen += read_until(reading, started.format(id=job_id).encode())
        assert process.wait(timeout=60) == 0, seen
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(reading)
    assert b"Traceback" not in seen, seen


def test_a_job_that_starts_at_once_is_said_to_start_and_quiet_says_nothing(cluster: LocalCluster) -> None:
    result = cluster.drover("run", "--", "echo", "hi")
    assert result.stdout == "hi\n"
    assert re.fullmatch(r"drover: job \d+ started on node \S+\n", result.stderr), result.stderr
    blocker = _occupy(cluster)
    quiet = subprocess.Popen([sys.executable, "-m", "drover", "run", "-Q", "--", "echo", "hi"], env=cluster.env,
                             cwd=cluster.workdir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    reading, writing = os.pipe()
    told = None
    try:
        _the_waiting_job(cluster, blocker)
        told = subprocess.Popen([sys.executable, "-m", "drover", "run", "--", "true"], env=cluster.env,
                                cwd=cluster.workdir, stdin=subprocess.DEVNULL, stderr=writing)
        # This one, submitted after the quiet one, is said to wait: the quiet one has waited longer still.
        read_until(reading, b"queued and waiting for resources")
        cluster.drover("cancel", str(blocker))
        out, err = quiet.communicate(timeout=60)
        assert told.wait(timeout=60) == 0
    finally:
        for process in (quiet, told):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
        os.close(reading)
        os.close(writing)
    assert (out, err, quiet.returncode) == ("hi\n", "", 0)


def test_ctrl_c_while_queued_cancels_a_pty_job(cluster: LocalCluster) -> None:
    blocker = _occupy(cluster)
    pid, fd = pty.fork()
    if pid == 0:  # the user's side: `drover run --pty` on a terminal, its job queued
        os.chdir(cluster.workdir)
        os.execve(sys.executable, [sys.executable, "-m", "drover", "run", "--pty", "--", "bash"],
                  cluster.env)
    try:
        job_id = _the_waiting_job(cluster, blocker)
        os.kill(pid, signal.SIGINT)
        seen = read_until(fd, b"revoked")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    _cancelled(cluster, job_id)
    assert os.waitstatus_to_exitcode(status) == 130, seen
    assert f"Job allocation {job_id} has been revoked".encode() in seen


def test_run_of_an_array_shows_each_tasks_output_labelled(cluster: LocalCluster) -> None:
    result = cluster.drover("run", "--array", "1-3", "--", "bash", "-c",
                            "echo out $DROVER_TASK_ID; echo err $DROVER_TASK_ID >&2; printf 'no newline'", check=False)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [
        "1: no newline", "1: out 1", "2: no newline", "2: out 2", "3: no newline", "3: out 3"], result.stdout
    for index in (1, 2, 3):
        assert f"{index}: err {index}\n" in result.stderr, result.stderr
    job_id = int(result.stderr.split("drover: job ")[1].split()[0])
    logs = cluster.drover("logs", f"{job_id}.2", check=False)
    assert logs.returncode != 0
    assert "stays on its node" not in logs.stderr and f"task {job_id}.2 has ended" in logs.stderr, logs.stderr
