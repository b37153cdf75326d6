"""Promises on a real cluster ([scheduler] promises = true), where what the controller decided
for a promise meets a change of mind or a daemon's death:

- a waiting job whose priority `drover alter` raises to that of a promised job takes nothing
  back; raised above it, it takes the promise back: it runs first, and the job it was promised
  to runs after it, once, as `drover history` and the events say;
- kill -9 of the controller, or of the node daemon, while a promise stranded by room freed
  beside it is being started in place (the controller stored the move and sent StartPromisedNow,
  the node has not acted on it): once the daemon is back, the job runs once and its end is
  recorded once.

The window of the move is made wide and certain, not raced: the node daemon holds each
attempt's cleanup before its report step (execd/faults.py), the controller is stopped while the
node sends the end that frees the room, and the node daemon is stopped while the controller
decides the move, so that the order waits, unread, in its socket."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.wait import wait_until

from drover.execd.faults import PAUSE_BEFORE, pause_marker

PROMISING = "[scheduler]\npromises = true\n"


@pytest.fixture
def one_cpu(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    yield from serve(request, LocalCluster(cpus=1, config_toml=PROMISING))


def attempts(cluster: LocalCluster, job: int) -> list[dict[str, object]]:
    return cluster.drover_json("show", str(job))["tasks"][0]["attempts"]  # type: ignore[no-any-return]


def event_kinds(cluster: LocalCluster, job: int) -> list[str]:
    return [event["kind"] for event in cluster.drover_json("events", str(job))]


def history(cluster: LocalCluster, job: int) -> list[tuple[int, str]]:
    return [(row["attempt"], row["state"]) for row in cluster.drover_json("history", "--job", str(job))]


def gated(cluster: LocalCluster, gate: Path, *options: str) -> int:
    """A job that runs until the file `gate` exists."""
    return cluster.submit(*options, "--", "sh", "-c", f"until [ -e {gate} ]; do sleep 0.02; done")


def counted(cluster: LocalCluster, name: str, *options: str) -> int:
    """A job that adds a line to `name` each time it runs, and the time it ran."""
    return cluster.submit(*options, "--", "sh", "-c", f"date +%s.%N >> {cluster.workdir / name}")


def test_a_waiting_job_raised_above_a_promised_one_takes_its_promise_back_and_runs_first(
        one_cpu: LocalCluster) -> None:
    cluster = one_cpu
    gate = cluster.workdir / "gate"
    first = gated(cluster, gate)
    promised = counted(cluster, "promised.runs")
    wait_until(lambda: [attempt.get("after") for attempt in attempts(cluster, promised)] == [f"{first}.0.1"],
               describe="the second job promised behind the first")
    raised = counted(cluster, "raised.runs", "--priority", "-10")  # waits: the one room is promised
    try:
        assert cluster.drover_json("show", str(raised))["state"] == "pending"

        # The same priority as the promised job's: it ranks after it (submitted later), nothing taken back.
        cluster.drover("alter", "--priority", "0", str(raised))
        wait_until(lambda: "altered" in event_kinds(cluster, raised), describe="the alter recorded")
        time.sleep(1)  # passes enough to have taken it back, had it been taken
        assert "promise_taken_back" not in event_kinds(cluster, promised)
        assert [attempt.get("after") for attempt in attempts(cluster, promised)] == [f"{first}.0.1"]
        assert not any(attempt.get("after") for attempt in attempts(cluster, raised))

        # Strictly higher: the promise is taken back, and the room promised to the raised job.
        cluster.drover("alter", "--priority", "1", str(raised))
        wait_until(lambda: "promise_taken_back" in event_kinds(cluster, promised),
                   describe="the promise taken back from the lower job")
        wait_until(lambda: [attempt.get("after") for attempt in attempts(cluster, raised)] == [f"{first}.0.1"],
                   describe="the raised job promised behind the first")
    finally:
        gate.touch()
    assert cluster.drover("wait", str(first), str(raised), str(promised)).returncode == 0

    (raised_ran,) = (cluster.workdir / "raised.runs").read_text().split()
    (promised_ran,) = (cluster.workdir / "promised.runs").read_text().split()  # once: one line
    assert float(raised_ran) < float(promised_ran)
    assert history(cluster, raised) == [(1, "completed")]
    # The promise taken back ended an attempt that never ran: its own row, with no start and no exit
    # status (docs/accounting.md), and the one run after it.
    rows = cluster.drover_json("history", "--job", str(promised))
    assert [(row["attempt"], row["state"], row["started_at"] is None, row["exit_status"]) for row in rows] == [
        (1, "requeued", True, None), (2, "completed", False, 0)], rows
    ran = [attempt for attempt in attempts(cluster, promised) if attempt.get("started_at") is not None]
    assert len(ran) == 1, attempts(cluster, promised)
    assert event_kinds(cluster, promised).count("job_ended") == 1


def held_before_report(cluster: LocalCluster) -> None:
    cluster.start_controller()
    cluster.start_execd(**{PAUSE_BEFORE: "report"})


@pytest.fixture
def two_cpus_held(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """Two CPUs; the node daemon holds each attempt's cleanup before its report step."""
    yield from serve(request, LocalCluster(cpus=2, config_toml=PROMISING), held_before_report)


def let_reports_go(cluster: LocalCluster) -> None:
    """Let every cleanup held before its report step go on."""
    for marker in cluster.spool.glob(f"*/{pause_marker('report')}"):
        marker.unlink(missing_ok=True)


def a_move_under_way(cluster: LocalCluster) -> tuple[int, Path, int]:
    """A long job and a short one running, a third promised behind one of them; the other ends,
    and the controller decides to start the third in place on its CPU while the node daemon is
    stopped (SIGSTOP), so the order waits unread. Returns (the job the third follows, the file
    that ends it, the third); the node daemon is left stopped."""
    assert cluster.controller is not None and cluster.execd is not None
    gates = {"a": cluster.workdir / "gate-a", "b": cluster.workdir / "gate-b"}
    jobs = {name: gated(cluster, gate) for name, gate in gates.items()}
    third = counted(cluster, "third.runs")
    wait_until(lambda: attempts(cluster, third)[-1].get("after") is not None,
               describe="the third job promised behind a running one")
    (promised,) = attempts(cluster, third)
    followed = next(name for name, job in jobs.items() if promised["after"] == f"{job}.0.1")
    other = "b" if followed == "a" else "a"
    gates[other].touch()  # the job it does not follow ends first; its node holds the end's report
    marker = cluster.spool / f"{jobs[other]}.0.1" / pause_marker("report")
    wait_until(marker.exists, describe="the ended job's report held")
    # The controller stopped, the node sends the end (nothing else is left for it to do but wait for
    # the acknowledgement); then the node stopped, the controller hears it and decides the move.
    os.kill(cluster.controller.pid, signal.SIGSTOP)
    try:
        marker.unlink()
        time.sleep(0.5)
        os.kill(cluster.execd.pid, signal.SIGSTOP)
    finally:
        os.kill(cluster.controller.pid, signal.SIGCONT)
    try:
        wait_until(lambda: "promise_started_in_place" in event_kinds(cluster, third), timeout=10,
                   describe="the move decided and stored while the node daemon is stopped")
        assert cluster.drover_json("show", str(third))["state"] == "pending"  # its node has not started it
        assert not (cluster.workdir / "third.runs").exists()
    except BaseException:
        os.kill(cluster.execd.pid, signal.SIGCONT)  # so that the cluster stops as it should
        raise
    time.sleep(0.2)  # the order, sent after the commit in the same turn, is in the node's socket
    return jobs[followed], gates[followed], third


def ran_once_and_ended_once(cluster: LocalCluster, third: int, followed: int, gate: Path) -> None:
    """The third job runs on the room freed beside it while the one it followed runs on, once;
    its end is recorded once; then the followed one ends too."""
    try:
        wait_until(lambda: (let_reports_go(cluster), cluster.drover_json("show", str(third))["state"])[1]
                   == "completed", timeout=30, describe="the third job run in place and its end recorded")
        assert cluster.drover_json("show", str(followed))["state"] == "running"
    finally:
        gate.touch()
    wait_until(lambda: (let_reports_go(cluster), cluster.drover_json("show", str(followed))["state"])[1]
               == "completed", timeout=30, describe="the followed job ended")
    assert len((cluster.workdir / "third.runs").read_text().split()) == 1  # it ran once
    (attempt,) = attempts(cluster, third)
    assert attempt["started_at"] is not None and attempt["exit_code"] == 0 and attempt.get("after") is None, attempt
    assert history(cluster, third) == [(1, "completed")]
    kinds = event_kinds(cluster, third)
    # Its start is an event only if a controller heard the node's Started report: one killed before
    # it did learns of the start from the report of the end (the attempt's started_at, above).
    assert kinds.count("started") <= 1, kinds
    assert [kinds.count(kind) for kind in ("exited", "completed", "job_ended")] == [1, 1, 1], kinds
    assert "promise_taken_back" not in kinds and "requeued" not in kinds, kinds


def test_a_controller_killed_while_a_promise_is_moved_leaves_it_run_once(two_cpus_held: LocalCluster) -> None:
    cluster = two_cpus_held
    followed, gate, third = a_move_under_way(cluster)
    assert cluster.execd is not None
    cluster.kill("controller")
    os.kill(cluster.execd.pid, signal.SIGCONT)  # it reads the order, or not: the channel is gone either way
    cluster.start_controller()
    ran_once_and_ended_once(cluster, third, followed, gate)


def test_a_node_daemon_killed_while_a_promise_is_moved_leaves_it_run_once(two_cpus_held: LocalCluster) -> None:
    cluster = two_cpus_held
    followed, gate, third = a_move_under_way(cluster)
    cluster.kill("execd")  # stopped: the order never read
    cluster.start_execd()  # without the hold; its hello says the third is still promised
    ran_once_and_ended_once(cluster, third, followed, gate)
