"""qsub -I: an interactive job on the user's terminal, through the path `drover run --pty`
takes, with PBS's banners and PBS_ENVIRONMENT=PBS_INTERACTIVE; without a terminal, the commands
read from stdin; qsub exits with the shell's status."""

from __future__ import annotations

import os
import pty

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.terminal import read_until


def _until_the_shell_answers(fd: int) -> None:
    """What is typed before the job's shell reads its terminal is not its input: ask until the
    shell itself answers (the terminal echoes `$((6*7))`, only the shell says 42)."""
    for _ in range(60):
        os.write(fd, b"echo ready-$((6*7))\n")
        try:
            read_until(fd, b"ready-42", timeout=1)
            return
        except AssertionError:
            continue
    raise AssertionError("the interactive job's shell never answered")


def test_qsub_i_runs_a_shell_on_the_terminal_as_a_pbs_interactive_job(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    pid, fd = pty.fork()
    if pid == 0:  # the user's side: qsub -I on a terminal
        os.chdir(cluster.workdir)
        os.execve(str(bin_dir / "qsub"), [str(bin_dir / "qsub"), "-I", "-N", "talk", "-l", "walltime=00:05:00"],
                  {**cluster.env, "SHELL": "/bin/bash"})
    try:
        read_until(fd, b"qsub: waiting for job to start")
        _until_the_shell_answers(fd)
        os.write(fd, b'echo "in $PBS_ENVIRONMENT as $PBS_JOBNAME"; exit 7\n')
        seen = read_until(fd, b"qsub: job completed")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert b"in PBS_INTERACTIVE as talk" in seen, seen
    assert os.waitstatus_to_exitcode(status) == 7, seen
    (job,) = cluster.client().jobs(include_ended=True)
    assert (job.name, job.time_limit_s) == ("talk", 300)


def test_qsub_i_without_a_terminal_runs_what_stdin_says(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    done = run(cluster, bin_dir, "qsub", "-I", stdin='echo "batch of $PBS_ENVIRONMENT"\nexit 3\n')
    assert "batch of PBS_INTERACTIVE" in done.stdout, done
    assert done.returncode == 3
