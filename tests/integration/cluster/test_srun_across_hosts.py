"""srun inside a job whose allocation spans two hosts (network namespaces whose users prove
themselves with MUNGE, tests/helpers/munge_cluster.py): the step's tasks are laid out over the
job's nodes as Slurm's block distribution lays them, master first, and a task for the other
host runs there as a task of the job (its address, and the file it writes, say where), its
output relayed through srun with -l labels. The job's Slurm variables name both nodes. srun
exits with its tasks' highest status, a task on the other host's included, refuses what the
job's nodes cannot hold in srun's words, and a SIGTERM to srun stops its task on the other host
too."""

from __future__ import annotations

import os
import pwd
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.munge_cluster import hosts_with_munge, run_on_node
from tests.helpers.netns import Hosts
from tests.helpers.system_install import SystemInstall
from tests.helpers.wait import wait_until

PE = """
[parallel_environments.mpi]
slots = 8
allocation_rule = "$round_robin"
control_slaves = true
"""


@pytest.fixture
def two_hosts(users: tuple[str, str], system_install: SystemInstall) -> Iterator[Hosts]:
    # the nodes run the installed Drover, which the jobs' owners run too
    with hosts_with_munge(["node1", "node2"], python=system_install.python, more_config=PE) as (hosts, _):
        yield hosts


def _on_node1(hosts: Hosts, install: SystemInstall, user: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return run_on_node(hosts, "node1", user, argv, [install.bindir])


SCRIPT = """
srun() {{ {python} -m drover.compat.slurm.srun "$@"; }}
echo "job $SLURMD_NODENAME $SLURM_JOB_NODELIST $SLURM_NNODES $SLURM_TASKS_PER_NODE $SLURM_NTASKS"
srun -l -n 2 sh -c 'echo "$SLURM_PROCID $SLURMD_NODENAME $SLURM_NODEID $SLURM_LOCALID $SLURM_STEP_NUM_NODES \
$(hostname -I | cut -d" " -f1)"; echo "$SLURMD_NODENAME" > where.$SLURM_PROCID'
echo "srun status $?"
srun -n 2 sh -c 'exit $((SLURM_PROCID * 3))'
echo "srun status $?"
srun -n 3 true
echo "srun status $?"
srun -N 3 true
echo "srun status $?"
{python} -m drover.compat.slurm.srun -n 2 sh -c 'echo $$ > pid.$SLURM_PROCID; exec sleep 300' &
while [ ! -s pid.1 ] || [ ! -s pid.0 ]; do sleep 0.2; done
kill -TERM $!
wait $!
echo "srun status $?"
"""


def test_srun_runs_its_steps_tasks_across_the_hosts_of_a_parallel_job(
        two_hosts: Hosts, users: tuple[str, str], system_install: SystemInstall) -> None:
    hosts = two_hosts
    alice, _ = users
    home = Path(pwd.getpwnam(alice).pw_dir)
    submitted = _on_node1(hosts, system_install, alice, "drover", "submit", "--parsable", "--pe", "mpi", "2",
                          "-o", "srun.out", "-e", "srun.err", "--", "bash", "-c",
                          SCRIPT.format(python=system_install.python))
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.split()[0]
    out, err = home / "srun.out", home / "srun.err"
    wait_until(lambda: (home / "pid.1").exists() and (home / "pid.1").read_text().strip() != "", timeout=120,
               describe="the long step's task to run on the other host")
    remote_pid = int((home / "pid.1").read_text())
    wait_until(lambda: out.exists() and out.read_text().count("srun status") == 5, timeout=90,
               describe="the interrupted srun to end")
    # its task on the other host stopped with it
    wait_until(lambda: not os.path.exists(f"/proc/{remote_pid}"), timeout=30,
               describe="the task on the other host stopped")
    lines = out.read_text().splitlines()
    _, master, nodelist, nnodes, tasks_per_node, ntasks = lines[0].split()
    other = "node2" if master == "node1" else "node1"
    assert (nodelist, nnodes, tasks_per_node, ntasks) == (
        "node[1-2]" if master == "node1" else "node2,node1", "2", "1(x2)", "2"), lines
    # task 0 on the master, task 1 on the other host: by its address in that host's namespace
    assert sorted(lines[1:3]) == [f"0: 0 {master} 0 0 2 {hosts.nodes[master].address}",
                                  f"1: 1 {other} 1 0 2 {hosts.nodes[other].address}"], lines
    assert ((home / "where.0").read_text(), (home / "where.1").read_text()) == (f"{master}\n", f"{other}\n")
    assert lines[3] == "srun status 0"
    assert lines[4] == "srun status 3"  # task 1, on the other host, exited 3
    # more tasks than the job's 2 slots, more nodes than its 2: refused as srun refuses them
    assert lines[5:7] == ["srun status 1", "srun status 1"], lines
    assert lines[7].startswith("srun status ") and int(lines[7].split()[-1]) >= 128, lines
    errors = err.read_text()
    assert f"srun: error: {other}: task 1: Exited with exit code 3" in errors
    assert f"srun: error: Unable to create step for job {job}: More processors requested than permitted" in errors
    assert "srun: error: Only allocated 2 nodes asked for 3" in errors
    finished = _on_node1(hosts, system_install, alice, "drover", "wait", "--timeout", "60", job)
    assert finished.returncode == 0, finished.stdout + finished.stderr
