"""bsub -I, -Is: an interactive job on the user's terminal, through the path `drover run --pty`
takes, with LSF's messages; without a terminal, the command given or the commands read from
stdin; bsub exits with the job's status."""

from __future__ import annotations

import os
import pty

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.terminal import read_until
from tests.integration.compat.test_pbs_interactive import _until_the_shell_answers


def test_bsub_is_runs_a_shell_on_the_terminal_as_an_lsf_job(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    pid, fd = pty.fork()
    if pid == 0:  # the user's side: bsub -Is on a terminal
        os.chdir(cluster.workdir)
        os.execve(str(bin_dir / "bsub"), [str(bin_dir / "bsub"), "-Is", "-J", "talk", "-W", "5", "/bin/bash"],
                  {**cluster.env, "SHELL": "/bin/bash"})
    try:
        read_until(fd, b"<<Waiting for dispatch ...>>")
        _until_the_shell_answers(fd)
        os.write(fd, b'echo "in $LSB_JOBNAME of queue $LSB_QUEUE"; exit 7\n')
        seen = read_until(fd, b"<<Job is finished>>")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert b"in talk of queue normal" in seen, seen
    assert os.waitstatus_to_exitcode(status) == 7, seen
    (job,) = cluster.client().jobs(include_ended=True)
    assert (job.name, job.time_limit_s) == ("talk", 300)


def test_bsub_i_without_a_terminal_runs_the_command_or_what_stdin_says(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    command = run(cluster, bin_dir, "bsub", "-I", "echo", "job", "$LSB_JOBID;", "exit 4")
    assert command.stdout.startswith("job ") and command.returncode == 4, command
    read = run(cluster, bin_dir, "bsub", "-I", stdin='echo "from stdin in $LSB_QUEUE"\nexit 3\n')
    assert "from stdin in normal" in read.stdout, read
    assert read.returncode == 3
