"""Tight integration across two hosts (network namespaces whose users prove themselves with
MUNGE, tests/helpers/munge_cluster.py). Process flow: "If the job is a parallel job with a tight
integration, this job specific spool directory is created on each execution host involved in the
execution of the job, for each task a subdirectory <petaskid> is created that holds the task
specific spool files."

A job of 2 slots of a `$round_robin` PE with control_slaves = true, submitted by a real user,
holds a slot on each host. Its script runs `qrsh -inherit OTHER CMD`: the command runs on the
other host (its address says so), its output comes back through the caller, and qrsh exits with
its status. A longer task started with `drover task start` has its <petaskid> spool directory on
the other host while it runs; cancelling the job kills it there and removes that directory.
Another user, and a host outside the job's allocation, are refused with the reason."""

from __future__ import annotations

import os
import pwd
import re
import subprocess
import time
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


def _on_node1(hosts: Hosts, install: SystemInstall, user: str, *argv: str,
              **env: str) -> subprocess.CompletedProcess[str]:
    return run_on_node(hosts, "node1", user, argv, [install.bindir], **env)


def _spool(hosts: Hosts, node: str) -> Path:
    """The node's spool, as its execd says in its log."""
    text = (hosts.nodes[node].state_dir / "execd.log").read_text(errors="replace")
    found = re.search(r", spool (\S+), ", text)
    assert found is not None, text
    return Path(found.group(1))


SCRIPT = """
other=$(awk -v me="$DROVER_NODE" '$1 != me {{print $1}}' "$PE_HOSTFILE")
echo "master $DROVER_NODE other $other"
{python} -m drover.compat.gridengine.qrsh -inherit "$other" sh -c 'echo "task on $DROVER_NODE $(hostname -I)"; exit 7'
echo "qrsh status $?"
drover task start "$other" -- sh -c 'echo $$ > task.pid; exec sleep 300' &
sleep 300
"""


def test_gridengine_qrsh_inherit_runs_a_task_on_the_other_host_of_a_parallel_job(
        two_hosts: Hosts, users: tuple[str, str], system_install: SystemInstall) -> None:
    hosts = two_hosts
    alice, bob = users
    home = Path(pwd.getpwnam(alice).pw_dir)
    submitted = _on_node1(hosts, system_install, alice, "drover", "submit", "--parsable", "--pe", "mpi", "2",
                          "-o", "pe.out", "--", "bash", "-c", SCRIPT.format(python=system_install.python))
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.split()[0]
    pid_file, out = home / "task.pid", home / "pe.out"
    wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", timeout=90,
               describe="the long task to run on the other host")
    lines = out.read_text().splitlines()
    _, master, _, other = lines[0].split()
    assert {master, other} == {"node1", "node2"}, lines
    address = hosts.nodes[other].address
    assert lines[1:] == [f"task on {other} {address} ", "qrsh status 7"] or lines[1:] == [
        f"task on {other} {address}", "qrsh status 7"], lines
    # The long task's spool directory on the other host: spool/<job>.0.1/<petaskid> (its second task)
    task_dir = _spool(hosts, other) / f"{job}.0.1" / "2"
    assert (task_dir / "config").exists() and (task_dir / "out").is_dir()
    task_pid = int(pid_file.read_text())
    assert os.path.exists(f"/proc/{task_pid}")

    # bob may not start a task in alice's job; alice may not start one outside its hosts
    refused = _on_node1(hosts, system_install, bob, "drover", "task", "start", other, "--", "true",
                        DROVER_JOB_ID=job)
    assert refused.returncode != 0 and f"belongs to {alice}" in refused.stderr, refused.stderr
    refused = _on_node1(hosts, system_install, alice, "drover", "task", "start", "nowhere", "--", "true",
                        DROVER_JOB_ID=job)
    assert refused.returncode != 0 and "host nowhere is not in the allocation" in refused.stderr, refused.stderr
    # nor stop one of its tasks (DELETE .../pe-tasks/{petask}, what an interrupted caller asks)
    stop = f"from drover.cli.common import client\nwith client() as api:\n    api.stop_pe_task({job}, '2')\n"
    refused = _on_node1(hosts, system_install, bob, system_install.python, "-c", stop)
    assert refused.returncode != 0 and f"belongs to {alice}" in refused.stderr, refused.stderr
    time.sleep(0.5)
    assert os.path.exists(f"/proc/{task_pid}")

    _on_node1(hosts, system_install, alice, "drover", "cancel", job)
    wait_until(lambda: not os.path.exists(f"/proc/{task_pid}"), timeout=30,
               describe="the task on the other host killed with its job")
    wait_until(lambda: not task_dir.parent.exists(), timeout=30,
               describe="the task's spool directory on the other host removed")
