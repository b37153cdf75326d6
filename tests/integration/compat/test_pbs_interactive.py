"""qsub -I: an interactive job on the user's terminal, through the path `drover run --pty`
takes, with PBS's banners and PBS_ENVIRONMENT=PBS_INTERACTIVE; without a terminal, the commands
read from stdin; qsub exits with the shell's status."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.terminal import interactive_job


def test_qsub_i_runs_a_shell_on_the_terminal_as_a_pbs_interactive_job(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    seen, status = interactive_job([str(bin_dir / "qsub"), "-I", "-N", "talk", "-l", "walltime=00:05:00"],
                                   {**cluster.env, "SHELL": "/bin/bash"}, cluster.workdir,
                                   b"qsub: waiting for job to start",
                                   b'echo "in $PBS_ENVIRONMENT as $PBS_JOBNAME"; exit 7\n', b"qsub: job completed")
    assert b"in PBS_INTERACTIVE as talk" in seen, seen
    assert status == 7, seen
    (job,) = cluster.client().jobs(include_ended=True)
    assert (job.name, job.time_limit_s) == ("talk", 300)


def test_qsub_i_without_a_terminal_runs_what_stdin_says(cluster: LocalCluster) -> None:
    bin_dir = install(cluster, "pbs")
    done = run(cluster, bin_dir, "qsub", "-I", stdin='echo "batch of $PBS_ENVIRONMENT"\nexit 3\n')
    assert "batch of PBS_INTERACTIVE" in done.stdout, done
    assert done.returncode == 3
