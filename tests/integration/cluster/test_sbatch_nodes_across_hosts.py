"""sbatch -N 2 on two hosts (network namespaces whose users prove themselves with MUNGE,
tests/helpers/munge_cluster.py), through the installed Slurm front ends, with no parallel
environment in drover.toml: the job is one of the built-in `slurm`, one CPU on each host; its
Slurm variables name both nodes, and srun inside it runs a task on each, the other host's as a
task of the job there (its address says where), its output relayed with -l labels. drover
show gives the job's slots on each node, squeue and scontrol its two nodes. srun -N 2 and
salloc -N 2 outside a job run their step across two hosts likewise."""

from __future__ import annotations

import pwd
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.munge_cluster import hosts_with_munge, run_on_node
from tests.helpers.netns import Hosts
from tests.helpers.system_install import SystemInstall
from tests.helpers.wait import wait_until


@pytest.fixture
def two_hosts(system_install: SystemInstall) -> Iterator[tuple[Hosts, Path]]:
    # the nodes run the installed Drover, and so do the front ends its users run
    with hosts_with_munge(["node1", "node2"], python=system_install.python) as (hosts, _):
        front_ends = hosts.root / "slurm-bin"
        subprocess.run([system_install.python, "-m", "drover", "compat", "install", str(front_ends)], check=True,
                       capture_output=True)
        front_ends.chmod(0o755)
        yield hosts, front_ends


def _on_node1(hosts: Hosts, install: SystemInstall, front_ends: Path, user: str,
              *argv: str) -> subprocess.CompletedProcess[str]:
    return run_on_node(hosts, "node1", user, argv, [front_ends, install.bindir])


JOB = """echo "job $SLURM_JOB_NODELIST $SLURM_NNODES $SLURM_TASKS_PER_NODE $SLURM_NTASKS $SLURM_JOB_CPUS_PER_NODE"
while [ ! -e go ]; do sleep 0.2; done
srun -l sh -c 'echo "$SLURMD_NODENAME $SLURM_NODEID $(hostname -I | cut -d" " -f1)"'
echo "srun status $?"
"""


def test_sbatch_nodes_runs_a_job_on_two_hosts_and_srun_runs_its_tasks_on_both(
        two_hosts: tuple[Hosts, Path], users: tuple[str, str], system_install: SystemInstall) -> None:
    hosts, front_ends = two_hosts
    alice, _ = users
    home = Path(pwd.getpwnam(alice).pw_dir)
    (home / "go").unlink(missing_ok=True)
    submitted = _on_node1(hosts, system_install, front_ends, alice, "sbatch", "--parsable", "-N", "2",
                          "--ntasks-per-node=1", "-o", "nodes.out", "-e", "nodes.err", "--wrap", JOB)
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.split()[0]
    out, err = home / "nodes.out", home / "nodes.err"
    wait_until(lambda: out.exists() and out.read_text().startswith("job "), timeout=120,
               describe="the job to start on its two hosts")
    shown = _on_node1(hosts, system_install, front_ends, alice, "drover", "show", job)
    assert "parallel environment slurm, 2 slot(s) (CPUs), 1 on each node" in shown.stdout, shown.stdout + shown.stderr
    # while it runs, squeue and scontrol give both its nodes
    listed = _on_node1(hosts, system_install, front_ends, alice, "squeue", "-h", "-j", job, "-o", "%N %D %T")
    assert listed.stdout.split() in (["node[1-2]", "2", "RUNNING"], ["node2,node1", "2", "RUNNING"]), (
        listed.stdout + listed.stderr)
    record = _on_node1(hosts, system_install, front_ends, alice, "scontrol", "show", "job", job)
    assert f"NodeList={listed.stdout.split()[0]}" in record.stdout and "NumNodes=2" in record.stdout, record.stdout
    go = _on_node1(hosts, system_install, front_ends, alice, "touch", str(home / "go"))
    assert go.returncode == 0, go.stderr
    wait_until(lambda: "srun status" in out.read_text(), timeout=90, describe="the job's srun to end")
    lines = out.read_text().splitlines()
    _, nodelist, nnodes, tasks_per_node, ntasks, cpus_per_node = lines[0].split()
    master = "node1" if nodelist == "node[1-2]" else "node2"
    other = "node2" if master == "node1" else "node1"
    assert nodelist in ("node[1-2]", "node2,node1"), lines
    assert (nnodes, tasks_per_node, ntasks, cpus_per_node) == ("2", "1(x2)", "2", "1(x2)"), lines
    # task 0 on the master, task 1 on the other host: by its address in that host's namespace
    assert sorted(lines[1:3]) == [f"0: {master} 0 {hosts.nodes[master].address}",
                                  f"1: {other} 1 {hosts.nodes[other].address}"], (lines, err.read_text())
    assert lines[3] == "srun status 0", (lines, err.read_text())
    finished = _on_node1(hosts, system_install, front_ends, alice, "drover", "wait", "--timeout", "60", job)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    # srun and salloc outside a job make such an allocation too, and the step runs across it
    step = ["srun", "-l", "sh", "-c", 'echo "$SLURMD_NODENAME $SLURM_NNODES"']
    for argv in (["srun", "-N", "2", *step[1:]], ["salloc", "-Q", "-N", "2", *step]):
        ran = _on_node1(hosts, system_install, front_ends, alice, *argv)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        ranks = sorted(line.split() for line in ran.stdout.splitlines())
        assert [rank for rank, _, _ in ranks] == ["0:", "1:"], ran.stdout + ran.stderr
        assert sorted(node for _, node, nodes in ranks if nodes == "2") == ["node1", "node2"], ran.stdout + ran.stderr
