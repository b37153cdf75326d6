"""A job of a parallel environment whose slots span two hosts (network namespaces,
tests/helpers/netns.py): a controller with a PE of sge_pe(5)'s `$round_robin` rule and two nodes
of 2 CPUs that joined by token. A job of 2 slots of it holds one CPU on each node while it runs,
its master's pe_hostfile has a line for each host (process flow: "pe_hostfile: A file describing
the host setup of a parallel job, containing each involved host, the queues the job was spooled
into and the number of reserved slots (tasks) per host"), NHOSTS and NQUEUES count them, a
restarted controller holds both CPUs again, and both nodes get their CPU back when it ends. When the host of its other node dies, the attempt
ends as if its master were lost: the job on the master is stopped, and the job is requeued and
runs again where it fits (docs/parallel-environments.md, "Losing a node of the job")."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from tests.helpers.netns import Hosts, why_not_available
from tests.helpers.wait import wait_until

CONFIG = """[controller]
heartbeat_s = 1.0
node_timeout_s = 3.0

[parallel_environments.mpi]
slots = 8
allocation_rule = "$round_robin"
"""


@pytest.fixture
def two_hosts() -> Iterator[Hosts]:
    why_not = why_not_available()
    if why_not:
        pytest.skip(why_not)
    with Hosts() as hosts:
        for name in ("node1", "node2"):
            hosts.add_node(name)
        try:
            hosts.start_controller(CONFIG)
            token = hosts.token("--uses", "2")
            for name in ("node1", "node2"):
                hosts.join(name, token)
            wait_until(lambda: {n["name"]: n["state"] for n in _nodes(hosts)} == {"node1": "up", "node2": "up"},
                       describe="both nodes up")
            yield hosts
        except BaseException:
            print(hosts.logs())
            raise
        print(hosts.logs())


def _nodes(hosts: Hosts) -> list[dict[str, Any]]:
    return json.loads(hosts.ctl.drover("nodes", "--json").stdout)  # type: ignore[no-any-return]


def _used(hosts: Hosts) -> dict[str, int]:
    return {node["name"]: node["cpus_used"] for node in _nodes(hosts)}


def test_pe_hostfile_of_a_round_robin_job_over_two_hosts_names_each_involved_host(two_hosts: Hosts) -> None:
    hosts = two_hosts
    workdir = hosts.root / "work"
    workdir.mkdir(mode=0o777)
    script = ('cat "$PE_HOSTFILE" > hosts; echo "$NSLOTS $NHOSTS $NQUEUES $DROVER_NODE" > counts; '
              'while [ ! -e go ]; do sleep 0.2; done')
    job = hosts.ctl.drover("submit", "--parsable", "--pe", "mpi", "2", "-D", str(workdir), "--", "bash", "-c",
                           script).stdout.split()[0]
    wait_until(lambda: (workdir / "counts").exists(), timeout=60, describe="the job to run")
    assert _used(hosts) == {"node1": 1, "node2": 1}  # a slot on each host, held while it runs
    hosts.kill_controller()
    hosts.restart_controller()  # the store keeps the other node with the attempt
    wait_until(lambda: {n["name"]: n["state"] for n in _nodes(hosts)} == {"node1": "up", "node2": "up"},
               describe="both nodes back with the restarted controller")
    assert _used(hosts) == {"node1": 1, "node2": 1}
    slots, nhosts, nqueues, master = (workdir / "counts").read_text().split()
    assert (slots, nhosts, nqueues) == ("2", "2", "2")
    lines = [line.split() for line in (workdir / "hosts").read_text().splitlines()]
    assert [line[0] for line in lines][0] == master  # the master's own line first
    assert sorted((host, count, queue) for host, count, queue, _ in lines) == [
        ("node1", "1", "default@node1"), ("node2", "1", "default@node2")]
    (workdir / "go").touch()
    hosts.ctl.drover("wait", "--timeout", "60", job, timeout=90)
    shown = json.loads(hosts.ctl.drover("show", "--json", job).stdout)
    shown = shown[0] if isinstance(shown, list) else shown
    assert shown["state"] == "completed", shown
    (attempt,) = [a for task in shown["tasks"] for a in task["attempts"]]
    assert attempt["node"] == master and list(attempt["other_nodes"]) == ["node2" if master == "node1" else "node1"]
    wait_until(lambda: _used(hosts) == {"node1": 0, "node2": 0}, describe="both nodes' CPUs given back")


def test_losing_the_other_host_of_a_parallel_job_stops_it_on_its_master_and_requeues_it(two_hosts: Hosts) -> None:
    hosts = two_hosts
    workdir = hosts.root / "work"
    workdir.mkdir(mode=0o777)
    script = ('echo "$DROVER_ATTEMPT $DROVER_NODE $$" >> started; '
              'if [ "$DROVER_ATTEMPT" = 1 ]; then sleep 300; fi; echo "$DROVER_ATTEMPT" >> done')
    job = hosts.ctl.drover("submit", "--parsable", "--pe", "mpi", "2", "-D", str(workdir), "--", "bash", "-c",
                           script).stdout.split()[0]
    # The shell makes the file before it writes the line into it: wait for the line.
    wait_until(lambda: (workdir / "started").exists() and len((workdir / "started").read_text().split()) == 3,
               timeout=60, describe="the job to run")
    _, master, pid = (workdir / "started").read_text().split()
    other = "node2" if master == "node1" else "node1"
    hosts.kill_host(other)
    hosts.ctl.drover("wait", "--timeout", "60", job, timeout=90)
    shown = json.loads(hosts.ctl.drover("show", "--json", job).stdout)
    shown = shown[0] if isinstance(shown, list) else shown
    attempts = [a for task in shown["tasks"] for a in task["attempts"]]
    assert shown["state"] == "completed", shown
    assert attempts[0]["failure"] == f"node {other} of its parallel job was lost", attempts
    assert [(a["number"], a["node"]) for a in attempts] == [(1, master), (2, master)]  # 2 slots fit it alone
    assert (workdir / "done").read_text() == "2\n"  # attempt 1 never finished
    wait_until(lambda: not os.path.exists(f"/proc/{pid}"), describe="attempt 1's job stopped on the master")
