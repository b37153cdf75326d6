"""Promises on a real cluster ([scheduler] promises = true, one CPU): a node starts each promised
task the moment the one before it ends, every task runs exactly once; a promised job cancelled
before it starts never runs; and a node daemon killed with promises outstanding finds them in
its spool when it comes back, each started once; a promise whose followed attempt loses its
shepherd to kill -9 starts on the room it leaves; and a promise stranded by room freed beside it
starts there in place, as the same attempt."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.attempts import shepherd_pid
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.wait import wait_until

from drover.shepherd.setup import physical_cpus

PROMISING = "[scheduler]\npromises = true\n"


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    yield from serve(request, LocalCluster(cpus=1, config_toml=PROMISING))


def attempts_of(cluster: LocalCluster, job: int) -> list[int]:
    """How many attempts each task of the job had."""
    return [len(task["attempts"]) for task in cluster.drover_json("show", str(job))["tasks"]]


def promised_behind_a_running_job(cluster: LocalCluster) -> tuple[Path, int, int]:
    """A job that runs until the file `gate` exists, and a second promised behind it (one CPU)."""
    gate = cluster.workdir / "gate"
    first = cluster.submit("--", "sh", "-c", f"until [ -e {gate} ]; do sleep 0.02; done")
    second = cluster.submit("-o", "second.out", "--", "echo", "ran")
    wait_until(lambda: [attempt.get("after") for attempt in cluster.drover_json("show", str(second))["tasks"][0]["attempts"]]
               == [f"{first}.0.1"], describe="the second job promised behind the first")
    return gate, first, second


def test_every_task_runs_once_each_started_by_its_node_as_the_one_before_ends(cluster: LocalCluster) -> None:
    job = cluster.submit("--array", "1-30", "-o", "task-%a.out", "--", "sh", "-c", "echo $DROVER_ARRAY_TASK_ID")
    assert cluster.drover("wait", str(job)).returncode == 0
    assert attempts_of(cluster, job) == [1] * 30
    assert all((cluster.workdir / f"task-{i}.out").read_text() == f"{i}\n" for i in range(1, 31))
    assert "promised, starts when" in (cluster.state_dir / "execd.log").read_text()


def test_a_promised_job_cancelled_before_it_starts_never_runs(cluster: LocalCluster) -> None:
    gate, first, second = promised_behind_a_running_job(cluster)
    (promised,) = cluster.drover_json("show", str(second))["tasks"][0]["attempts"]
    assert promised["after"] == f"{first}.0.1"  # what it waits for, as `drover show` says
    shown = cluster.drover("show", str(second)).stdout
    assert f"promised: starts on {promised['node']} the moment attempt {first}.0.1 ends there" in shown, shown
    cluster.drover("cancel", str(second))
    wait_until(lambda: cluster.drover_json("show", str(second))["state"] == "cancelled", describe="the cancel")
    gate.touch()
    assert cluster.drover("wait", str(first)).returncode == 0
    assert not (cluster.workdir / "second.out").exists()
    (attempt,) = cluster.drover_json("show", str(second))["tasks"][0]["attempts"]
    assert attempt["started_at"] is None


def test_promises_outlive_a_node_daemon_killed_while_they_wait(cluster: LocalCluster) -> None:
    gate, first, second = promised_behind_a_running_job(cluster)
    wait_until(lambda: (cluster.spool / f"{second}.0.1" / "after").exists(), describe="the promise in the spool")
    cluster.kill("execd")
    cluster.start_execd()
    gate.touch()
    assert cluster.drover("wait", str(first), str(second)).returncode == 0
    assert (cluster.workdir / "second.out").read_text() == "ran\n"
    assert attempts_of(cluster, second) == [1]


def test_a_promise_starts_when_the_shepherd_it_follows_is_killed(cluster: LocalCluster) -> None:
    """kill -9 of the shepherd of the attempt a promise follows: that attempt ends as its
    shepherd's loss says (a system failure: docs/faults.md), its job with nothing left running,
    and the promised job starts on the room it leaves, once; the first job runs again as a new
    attempt and completes."""
    gate, first, second = promised_behind_a_running_job(cluster)
    os.kill(shepherd_pid(cluster, f"{first}.0.1"), signal.SIGKILL)
    assert cluster.drover("wait", str(second)).returncode == 0
    assert (cluster.workdir / "second.out").read_text() == "ran\n"
    assert attempts_of(cluster, second) == [1]
    wait_until(lambda: cluster.drover_json("show", str(first))["tasks"][0]["attempts"][0]["ended_at"] is not None,
               describe="the first attempt's end recorded")
    gate.touch()  # a first job run again (requeued after its shepherd's loss) ends too
    assert cluster.drover("wait", str(first)).returncode == 0
    shown = cluster.drover_json("show", str(first))
    assert shown["state"] == "completed", shown
    attempts = shown["tasks"][0]["attempts"]
    assert [attempt["number"] for attempt in attempts] == [1, 2]
    assert attempts[0]["failure"] == "the shepherd died (signal 9) before recording how the job ended", attempts[0]


@pytest.fixture
def two_cpus(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    yield from serve(request, LocalCluster(cpus=2, config_toml=PROMISING))


def test_a_promise_behind_a_long_job_starts_in_place_on_the_room_that_frees_beside_it(two_cpus: LocalCluster) -> None:
    """Two CPUs, a long job and a short one running, a third promised behind the long one: when
    the short one ends, the third starts on its CPU at once, as the same attempt (pinned there;
    one row in `drover history`, no requeued one), not when the long one ends."""
    cluster = two_cpus
    long_gate, short_gate = cluster.workdir / "long-gate", cluster.workdir / "short-gate"
    long = cluster.submit("--", "sh", "-c", f"until [ -e {long_gate} ]; do sleep 0.02; done")
    short = cluster.submit("--", "sh", "-c", f"until [ -e {short_gate} ]; do sleep 0.02; done")
    third = cluster.submit("-o", "third.out", "--", "sh", "-c", "echo ran; grep Cpus_allowed_list /proc/self/status")
    wait_until(lambda: cluster.drover_json("show", str(third))["tasks"][0]["attempts"][-1].get("after") is not None,
               describe="the third job promised behind a running one")
    (promised,) = cluster.drover_json("show", str(third))["tasks"][0]["attempts"]
    followed = promised["after"]
    gate = long_gate if followed == f"{long}.0.1" else short_gate
    other = short_gate if gate is long_gate else long_gate
    other.touch()  # the job it does not follow ends first
    try:
        wait_until(lambda: cluster.drover_json("show", str(third))["state"] == "completed",
                   describe="the third job run on the room freed beside its promise")
        assert cluster.drover_json("show", str(long if gate is long_gate else short))["state"] == "running"
        ran, allowed = (cluster.workdir / "third.out").read_text().splitlines()
        freed = cluster.drover_json("show", str(short if gate is long_gate else long))["tasks"][0]["attempts"][0]
        (moved,) = cluster.drover_json("show", str(third))["tasks"][0]["attempts"]
        assert ran == "ran" and moved["cpu_ids"] == freed["cpu_ids"] and moved.get("after") is None, moved
        assert allowed.split()[-1] == ",".join(map(str, sorted(physical_cpus(freed["cpu_ids"])))), allowed
        rows = cluster.drover_json("history", "--job", str(third))
        assert [(row["attempt"], row["state"]) for row in rows] == [(1, "completed")], rows
        kinds = [event["kind"] for event in cluster.drover_json("events", str(third))]
        assert "promise_started_in_place" in kinds and "promise_taken_back" not in kinds, kinds
        assert f"attempt {third}.0.1: started in place on CPUs" in (cluster.state_dir / "execd.log").read_text()
    finally:
        gate.touch()
