"""salloc run as a real process: an allocation that runs its command, srun steps inside it, its
messages and exit statuses; on a terminal, the command gets one of its own."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.helpers.cluster import LocalCluster
from tests.helpers.terminal import read_until
from tests.helpers.wait import wait_until


def install(cluster: LocalCluster) -> tuple[Path, dict[str, str]]:
    bin_dir = cluster.root / "bin"
    cluster.drover("compat", "install", str(bin_dir))
    return bin_dir, {**cluster.env, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}


def test_salloc_runs_the_command_in_the_allocation_and_returns_its_status(cluster: LocalCluster) -> None:
    bin_dir, env = install(cluster)
    done = subprocess.run([str(bin_dir / "salloc"), "-n", "2", "-t", "5", "bash", "-c",
                           "echo $SLURM_JOB_NAME $SLURM_NTASKS; srun -l hostname | sort; exit 7"],
                          capture_output=True, text=True, env=env, cwd=cluster.workdir, timeout=120, stdin=subprocess.DEVNULL)
    node = cluster.drover_json("nodes")[0]["name"]
    assert done.returncode == 7
    assert done.stdout.splitlines() == ["interactive 2", f"0: {node}", f"1: {node}"]
    job = done.stderr.split("Granted job allocation ")[1].split()[0]
    assert f"salloc: Relinquishing job allocation {job}" in done.stderr
    killed = subprocess.run([str(bin_dir / "salloc"), "-Q", "bash", "-c", "kill -INT $$"], capture_output=True,
                            text=True, env=env, cwd=cluster.workdir, timeout=120, stdin=subprocess.DEVNULL)
    assert killed.returncode == 0 and "Granted" not in killed.stderr  # as salloc: SIGINT is the user's doing


def test_no_shell_holds_the_allocation_until_it_is_cancelled(cluster: LocalCluster) -> None:
    bin_dir, env = install(cluster)
    done = subprocess.run([str(bin_dir / "salloc"), "--no-shell", "-J", "held"], capture_output=True, text=True,
                          env=env, cwd=cluster.workdir, timeout=60)
    assert done.returncode == 0
    job = done.stderr.split("Granted job allocation ")[1].split()[0]
    wait_until(lambda: cluster.drover_json("show", job)["state"] == "running", describe="the allocation to start")
    cluster.drover("cancel", job)
    cluster.drover("wait", job, check=False)


def test_on_a_terminal_the_command_gets_a_terminal(cluster: LocalCluster) -> None:
    """1. salloc on a terminal, its command asking for a line. 2. Once the allocation is granted,
    a line is typed. 3. The command answers on its terminal and its status is salloc's."""
    bin_dir, env = install(cluster)
    primary, secondary = os.openpty()
    process = subprocess.Popen([str(bin_dir / "salloc"), "-J", "tty", "bash", "-c",
                                "[ -t 0 ] && read -p 'name? ' name && echo hi $name on $SLURM_JOB_NAME; exit 3"],
                               stdin=secondary, stdout=secondary, stderr=secondary, env=env, cwd=cluster.workdir)
    os.close(secondary)
    try:
        assert b"Granted job allocation" in read_until(primary, b"name? ")
        os.write(primary, b"bob\r")
        assert b"hi bob on tty" in read_until(primary, b"Relinquishing job allocation")
        assert process.wait(timeout=30) == 3
    finally:
        os.close(primary)
        if process.poll() is None:
            process.kill()
            process.wait()
