"""Nodes lost, and never a job run twice: hosts in network namespaces (tests/helpers/netns.py),
a controller with two nodes that joined by token, jobs that take a whole node each.

- A node's host killed outright (every process of it, kill -9): its jobs go back to the queue
  once node_timeout_s has passed and finish on the other node, each task with one result.
- The link to a node cut mid-job (no FIN, no RST): the controller hears no heartbeat, the node
  is DOWN, and after node_timeout_s its job is requeued and finishes on the other node. When the
  link comes back, the node's stale attempt is stopped, and its late report counts nowhere.
- The same cut, restored before node_timeout_s: nothing is requeued; the job finishes once, on
  its node.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.netns import Hosts, why_not_available
from tests.helpers.wait import wait_until

HEARTBEAT_S = 1.0
# Attempt 1 of a job says where it runs, then waits for a long time; a later attempt finishes.
SCRIPT = ('echo "$DROVER_ATTEMPT $DROVER_NODE" >> started.$DROVER_JOB_ID; '
          'if [ "$DROVER_ATTEMPT" = 1 ] && [ ! -e quick ]; then sleep 300; fi; '
          'echo "$DROVER_ATTEMPT $DROVER_NODE" >> done.$DROVER_JOB_ID')


def _cluster(node_timeout_s: float) -> Iterator[Hosts]:
    why_not = why_not_available()
    if why_not:
        pytest.skip(why_not)
    with Hosts() as hosts:
        for name in ("node1", "node2"):
            hosts.add_node(name)
        try:
            hosts.start_controller(f"[controller]\nnode_timeout_s = {node_timeout_s}\nheartbeat_s = {HEARTBEAT_S}\n")
            token = hosts.token("--uses", "2")
            for name in ("node1", "node2"):
                hosts.join(name, token)
            wait_until(lambda: _nodes(hosts) == {"node1": "up", "node2": "up"}, describe="both nodes up")
            yield hosts
        except BaseException:
            print(hosts.logs())
            raise
        print(hosts.logs())


@pytest.fixture
def quick_loss() -> Iterator[Hosts]:
    yield from _cluster(node_timeout_s=3.0)


@pytest.fixture
def slow_loss() -> Iterator[Hosts]:
    yield from _cluster(node_timeout_s=60.0)


def _nodes(hosts: Hosts) -> dict[str, str]:
    return {node["name"]: node["state"] for node in json.loads(hosts.ctl.drover("nodes", "--json").stdout)}


def _show(hosts: Hosts, job: int) -> dict[str, Any]:
    shown = json.loads(hosts.ctl.drover("show", "--json", str(job)).stdout)
    return shown[0] if isinstance(shown, list) else shown  # type: ignore[no-any-return]


def _submit(hosts: Hosts, workdir: Path) -> int:
    """A job that takes a whole node (2 CPUs), running SCRIPT in `workdir`."""
    return int(hosts.ctl.drover("submit", "--parsable", "-c", "2", "-D", str(workdir), "--", "bash", "-c",
                                SCRIPT).stdout.split()[0])


def _running_on(hosts: Hosts, workdir: Path, jobs: list[int]) -> dict[int, str]:
    """Each job's node once its attempt 1 runs there."""
    def where() -> dict[int, str] | None:
        found = {}
        for job in jobs:
            started = workdir / f"started.{job}"
            if not started.exists():
                return None
            found[job] = started.read_text().split()[1]
        return found
    return wait_until(where, timeout=60, describe="the jobs to run")


def _workdir(hosts: Hosts) -> Path:
    workdir = hosts.root / "work"
    workdir.mkdir(mode=0o777)
    return workdir


def _one_result(hosts: Hosts, workdir: Path, job: int, lost_on: str, finished_on: str) -> None:
    """The job completed once: attempt 1 lost with its node, attempt 2 the one result."""
    hosts.ctl.drover("wait", "--timeout", "90", str(job), timeout=120)
    shown = _show(hosts, job)
    attempts = [a for task in shown["tasks"] for a in task["attempts"]]
    assert shown["state"] == "completed", shown
    assert [(a["number"], a["node"]) for a in attempts] == [(1, lost_on), (2, finished_on)], attempts
    assert attempts[0]["failure"] == f"node {lost_on} was lost" and attempts[1]["exit_code"] == 0, attempts
    assert (workdir / f"done.{job}").read_text() == f"2 {finished_on}\n"  # attempt 1 never finished


def test_a_node_killed_outright_loses_nothing_and_runs_nothing_twice(quick_loss: Hosts) -> None:
    hosts = quick_loss
    workdir = _workdir(hosts)
    jobs = [_submit(hosts, workdir), _submit(hosts, workdir)]
    where = _running_on(hosts, workdir, jobs)
    assert sorted(where.values()) == ["node1", "node2"]
    (victim,) = [job for job, node in where.items() if node == "node1"]
    hosts.kill_host("node1")
    wait_until(lambda: _nodes(hosts)["node1"] == "down", describe="node1 to be DOWN")
    # Requeued once node_timeout_s has passed; it waits for node2, whose job runs to its end.
    wait_until(lambda: _show(hosts, victim)["tasks"][0]["state"] in ("pending", "dispatched", "running"),
               timeout=30, describe="the lost job to be requeued")
    (workdir / "quick").touch()  # from now on attempts end at once...
    other = next(job for job in jobs if job != victim)
    hosts.ctl.drover("cancel", str(other))  # ...and node2 is freed for the requeued job
    _one_result(hosts, workdir, victim, lost_on="node1", finished_on="node2")


def test_a_cut_link_requeues_after_the_timeout_and_the_stale_attempt_is_stopped_when_it_heals(
        quick_loss: Hosts) -> None:
    hosts = quick_loss
    workdir = _workdir(hosts)
    (job,) = [_submit(hosts, workdir)]
    (node,) = _running_on(hosts, workdir, [job]).values()
    other = "node2" if node == "node1" else "node1"
    (workdir / "quick").touch()  # attempt 1 is asleep already; any later one ends at once
    hosts.cut(node)
    try:
        wait_until(lambda: _nodes(hosts)[node] == "down", timeout=20, describe=f"{node} to be heard no more")
        assert f"node {node}: silent for more than" in hosts.controller_log()
        hosts.ctl.drover("wait", "--timeout", "60", str(job), timeout=90)  # on the other node
    finally:
        hosts.restore(node)
    # The node is back: it is told to stop the stale attempt, which it still ran all along.
    wait_until(lambda: _nodes(hosts)[node] == "up", timeout=60, describe=f"{node} to come back")
    events = lambda: [e["kind"] for e in json.loads(hosts.ctl.drover("events", "--json", str(job)).stdout)]  # noqa: E731
    wait_until(lambda: "stale_report" in events(), timeout=30, describe="the stale attempt's late report")
    _one_result(hosts, workdir, job, lost_on=node, finished_on=other)
    stopped = json.loads(hosts.ctl.drover("events", "--json").stdout)
    assert any(e["kind"] == "stray_attempt_stopped" and e["detail"]["stopped"] == f"{job}.0.1" for e in stopped)


def test_a_cut_healed_before_the_timeout_requeues_nothing(slow_loss: Hosts) -> None:
    hosts = slow_loss
    workdir = _workdir(hosts)
    (job,) = [_submit(hosts, workdir)]
    (node,) = _running_on(hosts, workdir, [job]).values()
    hosts.cut(node)
    try:
        wait_until(lambda: _nodes(hosts)[node] == "down", timeout=20, describe=f"{node} to be heard no more")
    finally:
        hosts.restore(node)
    wait_until(lambda: _nodes(hosts)[node] == "up", timeout=60, describe=f"{node} to come back")
    assert _show(hosts, job)["tasks"][0]["state"] == "running"
    (workdir / "quick").touch()
    hosts.ctl.drover("cancel", str(job))  # attempt 1 sleeps: end it; its one result is its own
    hosts.ctl.drover("wait", "--timeout", "60", str(job), check=False, timeout=90)
    shown = _show(hosts, job)
    attempts = [a for task in shown["tasks"] for a in task["attempts"]]
    assert shown["state"] == "cancelled" and [(a["number"], a["node"]) for a in attempts] == [(1, node)]


def test_a_controller_killed_while_three_nodes_run_jobs_loses_nothing_and_runs_nothing_twice(
        slow_loss: Hosts) -> None:
    hosts = slow_loss
    hosts.add_node("node3")  # linked to the controller's host; it joins while the cluster runs
    hosts.join("node3", hosts.token())
    wait_until(lambda: _nodes(hosts).get("node3") == "up", describe="node3 up")
    workdir = _workdir(hosts)
    (workdir / "quick").touch()
    # Jobs that take a second each, three nodes of two CPUs: some run, some wait, some are done.
    jobs = [int(hosts.ctl.drover("submit", "--parsable", "-c", "1", "-D", str(workdir), "--", "bash", "-c",
                                 f'echo "$DROVER_ATTEMPT $DROVER_NODE" >> ran.{n}; sleep 1').stdout.split()[0])
            for n in range(20)]
    wait_until(lambda: sum(1 for n in range(20) if (workdir / f"ran.{n}").exists()) >= 6, describe="jobs to run")
    hosts.kill_controller()
    hosts.restart_controller()
    for job in jobs:
        hosts.ctl.drover("wait", "--timeout", "120", str(job), timeout=150)
    for n, job in enumerate(jobs):
        shown = _show(hosts, job)
        attempts = [a for task in shown["tasks"] for a in task["attempts"]]
        assert shown["state"] == "completed" and len(attempts) == 1, shown
        assert (workdir / f"ran.{n}").read_text().count("\n") == 1  # it ran once
    assert {a["node"] for job in jobs for task in _show(hosts, job)["tasks"] for a in task["attempts"]} == \
        {"node1", "node2", "node3"}
