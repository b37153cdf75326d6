"""bsub -I, -Is: an interactive job on the user's terminal, through the path `drover run --pty`
takes, with LSF's messages; without a terminal, the command given or the commands read from
stdin; bsub exits with the job's status."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.terminal import interactive_job


def test_bsub_is_runs_a_shell_on_the_terminal_as_an_lsf_job(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    seen, status = interactive_job([str(bin_dir / "bsub"), "-Is", "-J", "talk", "-W", "5", "/bin/bash"],
                                   {**cluster.env, "SHELL": "/bin/bash"}, cluster.workdir,
                                   b"<<Waiting for dispatch ...>>",
                                   b'echo "in $LSB_JOBNAME of queue $LSB_QUEUE"; exit 7\n', b"<<Job is finished>>")
    assert b"in talk of queue normal" in seen, seen
    assert status == 7, seen
    (job,) = cluster.client().jobs(include_ended=True)
    assert (job.name, job.time_limit_s) == ("talk", 300)


def test_bsub_i_without_a_terminal_runs_the_command_or_what_stdin_says(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    command = run(cluster, bin_dir, "bsub", "-I", "echo", "job", "$LSB_JOBID;", "exit 4")
    assert command.stdout.startswith("job ") and command.returncode == 4, command
    read = run(cluster, bin_dir, "bsub", "-I", stdin='echo "from stdin in $LSB_QUEUE"\nexit 3\n')
    assert "from stdin in normal" in read.stdout, read
    assert read.returncode == 3
