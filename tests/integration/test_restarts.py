"""Daemons die at any instant; nothing is lost and nothing is counted twice."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.requests_waiting import requests_waiting
from tests.helpers.wait import wait_until


def _ended_once(cluster: LocalCluster, jobs: list[int]) -> None:
    events = cluster.drover_json("events")
    ended = Counter(e["job_id"] for e in events if e["kind"] == "job_ended")
    exits = Counter((e["job_id"], e["attempt"]) for e in events
                    if e["kind"] == "exited")
    for job in jobs:
        assert ended[job] == 1, f"job {job} ended {ended[job]} times"
        assert exits[job, 1] == 1, f"job {job}'s exit was recorded {exits[job, 1]} times"


def test_controller_killed_while_jobs_run_and_wait_loses_nothing(cluster: LocalCluster) -> None:
    """1. Two jobs run (2 CPUs) and two wait. 2. kill -9 the controller.
    3. The running jobs finish while it is down. 4. Restart it: every job is still there, the
    running ones are recorded exactly once, the waiting ones run."""
    release = cluster.workdir / "go"
    running = [cluster.submit("--", "bash", "-c", f"while [ ! -e {release} ]; do sleep 0.05; done; echo done")
               for _ in range(2)]
    waiting = [cluster.submit("--", "echo", "later") for _ in range(2)]
    wait_until(lambda: all(cluster.drover_json("show", str(j))["state"] == "running" for j in running),
               describe="two jobs running")
    cluster.kill("controller")
    release.touch()
    wait_until(lambda: all((cluster.workdir / f"drover-{j}.out").exists()
                           and "done" in (cluster.workdir / f"drover-{j}.out").read_text() for j in running),
               describe="the running jobs to finish while the controller is down")
    cluster.start_controller()
    cluster.wait_node_up()
    assert cluster.drover("wait", *map(str, running + waiting)).returncode == 0
    for job in running + waiting:
        shown = cluster.drover_json("show", str(job))
        assert shown["state"] == "completed"
        assert len(shown["tasks"][0]["attempts"]) == 1
    _ended_once(cluster, running + waiting)


def held_in_its_prolog(cluster: LocalCluster, *command: str) -> tuple[int, Path]:
    """A job of `command` whose prolog holds it until the gate (the path returned) exists, once
    that prolog runs."""
    in_prolog, gate = cluster.workdir / "in-prolog", cluster.workdir / "gate"
    prolog = cluster.workdir / "prolog.sh"
    prolog.write_text(f"#!/bin/sh\ntouch {in_prolog}\nwhile [ ! -e {gate} ]; do sleep 0.05; done\n")
    prolog.chmod(0o755)
    job = cluster.submit("--prolog", str(prolog), "--", *command)
    wait_until(in_prolog.exists, describe="the job's prolog to run")
    return job, gate


def test_an_attempt_that_started_and_ended_while_the_controller_was_killed_is_started_once_before_its_end(
        cluster: LocalCluster) -> None:
    """1. A job's attempt reaches the node, whose prolog holds the job until a gate opens.
    2. kill -9 the controller. 3. The gate opens: the job starts and ends while no controller
    hears it (the node's Started report goes to no one; it is not sent again). 4. Restart the
    controller: the node's end report records the attempt's start first, once, at the node's
    start time; its history shows an attempt that started, not one that ended without a start."""
    job, gate = held_in_its_prolog(cluster, "echo", "ran")
    assert cluster.drover_json("show", str(job))["state"] == "dispatched"
    cluster.kill("controller")
    gate.touch()
    # The job has ended (its shepherd's outcome recorded) before a controller hears of it: the
    # node's hello says the attempt is no longer running, and only its end report tells.
    wait_until(lambda: (cluster.spool / f"{job}.0.1" / "exit_status").exists(),
               describe="the job to start and end while the controller is down")
    cluster.start_controller()
    cluster.wait_node_up()
    assert cluster.drover("wait", str(job)).returncode == 0
    (attempt,) = cluster.drover_json("show", str(job))["tasks"][0]["attempts"]
    events = cluster.drover_json("events", str(job))
    kinds = [e["kind"] for e in events if e["kind"] in ("dispatched", "started", "exited", "completed")]
    assert kinds == ["dispatched", "started", "exited", "completed"], events
    (started,) = [e for e in events if e["kind"] == "started"]
    assert started["attempt"] == 1 and started["time"] == attempt["started_at"], (started, attempt)
    assert started["time"] <= attempt["ended_at"]
    _ended_once(cluster, [job])


def test_an_attempt_in_its_prolog_when_the_controller_comes_back_is_not_started_until_its_job_is(
        cluster: LocalCluster) -> None:
    """1. A job's prolog holds it until a gate opens. 2. kill -9 the controller, and start it
    again: the node's hello names the attempt, its job not started. 3. The job stays dispatched
    (not running, no start recorded at the hello). 4. The gate opens: the job starts then, once,
    and its start is after the gate opened."""
    job, gate = held_in_its_prolog(cluster, "sleep", "1")
    cluster.kill("controller")
    cluster.start_controller()
    cluster.wait_node_up()
    time.sleep(0.5)  # a start the hello made would be recorded by now
    assert cluster.drover_json("show", str(job))["state"] == "dispatched"
    assert "started" not in [e["kind"] for e in cluster.drover_json("events", str(job))]
    opened = time.time()
    gate.touch()
    assert cluster.drover("wait", str(job)).returncode == 0
    (started,) = [e for e in cluster.drover_json("events", str(job)) if e["kind"] == "started"]
    assert started["time"] >= opened - 0.05
    _ended_once(cluster, [job])


def test_a_wait_cut_short_by_the_controller_stopping_says_so(cluster: LocalCluster) -> None:
    """`drover wait` waits on a running job; the controller is stopped (SIGTERM). It answers
    the waiting request at once that it is shutting down; the wait asks again, finds no
    controller and says so, exit 2 (the cluster is unavailable). Not the server's own cut-off
    after its grace time (an HTTP 500, exit 1)."""
    job = cluster.submit("--", "sleep", "30")
    wait_until(lambda: cluster.drover_json("show", str(job))["state"] == "running", describe="the job running")
    waiting = subprocess.Popen([sys.executable, "-m", "drover", "wait", str(job)], env=cluster.env,
                               cwd=cluster.workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: requests_waiting(cluster.socket) == 1, timeout=60,
                   describe="the wait waiting on the controller")
        cluster.kill("controller", signal.SIGTERM)
        out, err = waiting.communicate(timeout=30)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait()
    assert waiting.returncode == 2, f"drover wait exited {waiting.returncode}: {err}"
    assert "no Drover cluster answers" in err and "500" not in err, err


def test_a_node_on_the_local_socket_goes_on_when_the_controller_stops_and_starts_again(cluster: LocalCluster) -> None:
    """1. Two jobs run on the node (its channel on the Unix socket) until a gate opens, two wait.
    2. The controller is stopped (SIGTERM): it exits 0, and all the node gets from it is its
    channel closed (or a standby's refusal) and then no answer. 3. Started again, it takes the
    node back; the jobs go on under the same shepherds, and all four finish, each once."""
    release = cluster.workdir / "go"
    running = [cluster.submit("--", "bash", "-c", f"while [ ! -e {release} ]; do sleep 0.05; done; echo done")
               for _ in range(2)]
    wait_until(lambda: all(cluster.drover_json("show", str(j))["state"] == "running" for j in running),
               describe="two jobs running")
    waiting = [cluster.submit("--", "echo", "later") for _ in range(2)]
    node_log = cluster.state_dir / "execd.log"
    before = len(node_log.read_text().splitlines())
    controller = cluster.controller
    assert controller is not None
    cluster.kill("controller", signal.SIGTERM)
    assert controller.returncode == 0, cluster.logs()

    cluster.start_controller()
    wait_until(lambda: "joined the cluster" in "\n".join(node_log.read_text().splitlines()[before:]),
               describe="the node to join the controller started again")
    since_the_stop = node_log.read_text().splitlines()[before:]
    for line in since_the_stop:  # its channel closed, or no controller to take it; nothing else
        if "joined the cluster" in line:
            break
        assert (f"controller channel to {cluster.socket}: " in line or "no controller took it" in line
                or "refused it (HTTP 503)" in line), line
    cluster.wait_node_up()
    release.touch()
    assert cluster.drover("wait", *map(str, running + waiting)).returncode == 0
    for job in running + waiting:
        shown = cluster.drover_json("show", str(job))
        assert shown["state"] == "completed" and len(shown["tasks"][0]["attempts"]) == 1, shown
    _ended_once(cluster, running + waiting)
    for name in ("controller", "execd"):
        assert "Traceback" not in (cluster.state_dir / f"{name}.log").read_text(), cluster.logs()


def test_execd_killed_while_jobs_run_does_not_kill_them_and_their_exits_count_once(cluster: LocalCluster) -> None:
    """1. Two jobs run. 2. kill -9 the execd (and with it the fork server's connection).
    3. The jobs go on and finish. 4. Restart the execd: it re-attaches from the spool and
    reports each exit exactly once."""
    release = cluster.workdir / "go"
    jobs = [cluster.submit("--", "bash", "-c", f"while [ ! -e {release} ]; do sleep 0.05; done; echo survived")
            for _ in range(2)]
    wait_until(lambda: all(cluster.drover_json("show", str(j))["state"] == "running" for j in jobs),
               describe="two jobs running")
    cluster.kill("execd")
    release.touch()
    wait_until(lambda: all("survived" in (cluster.workdir / f"drover-{j}.out").read_text() for j in jobs),
               describe="the jobs to finish with no execd")
    cluster.start_execd()
    assert cluster.drover("wait", *map(str, jobs)).returncode == 0
    for job in jobs:
        (attempt,) = cluster.drover_json("show", str(job))["tasks"][0]["attempts"]
        assert attempt["exit_code"] == 0
    _ended_once(cluster, jobs)


def test_execd_killed_while_jobs_still_run_reattaches_to_them(cluster: LocalCluster) -> None:
    release = cluster.workdir / "go"
    job = cluster.submit("--", "bash", "-c", f"while [ ! -e {release} ]; do sleep 0.05; done; exit 4")
    wait_until(lambda: cluster.drover_json("show", str(job))["state"] == "running", describe="running")
    cluster.kill("execd")
    cluster.start_execd()
    assert cluster.drover_json("show", str(job))["state"] == "running"
    release.touch()
    assert cluster.drover("wait", str(job), check=False).returncode == 4
    _ended_once(cluster, [job])


def test_controller_restart_keeps_pending_held_and_array_jobs(cluster: LocalCluster) -> None:
    held = cluster.submit("--hold", "--array", "1-100000%3", "--", "true")
    cluster.kill("controller")
    cluster.start_controller()
    cluster.wait_node_up()
    shown = cluster.drover_json("show", str(held))
    assert shown["state"] == "held" and shown["task_counts"] == {"held": 100000}
    cluster.drover("cancel", str(held))
    assert cluster.drover_json("show", str(held))["state"] == "cancelled"


def test_a_submission_sent_again_after_a_controller_kill_gets_the_same_ids(cluster: LocalCluster) -> None:
    """1. A submission of two held jobs with a request key, through the client API. 2. kill -9
    the controller, start it again. 3. The same request again: the same ids, no new job."""
    body = {"jobs": [{"script": "#!/bin/sh\ntrue\n", "workdir": str(cluster.workdir), "hold": True}] * 2,
            "request_key": "retried-0123456789"}
    with cluster.client() as client:
        first = client.transport.call("POST", "/v1/jobs", body)["ids"]
    cluster.kill("controller")
    cluster.start_controller()
    with cluster.client() as client:
        again = client.transport.call("POST", "/v1/jobs", body)["ids"]
        assert again == first and len(first) == 2
        assert sorted(job.id for job in client.jobs(include_ended=True)) == first
        other = client.transport.call("POST", "/v1/jobs", {**body, "request_key": "another-0123456789"})["ids"]
    assert other == [first[-1] + 1, first[-1] + 2]  # another key: another submission
    cluster.drover("cancel", *map(str, first + other))


def test_event_log_file_has_every_event_once_across_a_controller_kill(cluster: LocalCluster) -> None:
    import json

    log = cluster.workdir / "events.jsonl"
    release = cluster.workdir / "go"
    job = cluster.submit("--event-log", str(log), "--", "bash", "-c", f"while [ ! -e {release} ]; do sleep 0.05; done")
    wait_until(lambda: cluster.drover_json("show", str(job))["state"] == "running", describe="running")
    cluster.kill("controller")
    release.touch()
    cluster.start_controller()
    assert cluster.drover("wait", str(job)).returncode == 0
    recorded = [e["seq"] for e in cluster.drover_json("events", str(job))]  # the job ended: all there are

    def written() -> list[int]:
        return [json.loads(line)["seq"] for line in log.read_text().splitlines()]

    # The owner's writer appends after the events are committed, not before `drover wait` returns.
    wait_until(lambda: len(written()) >= len(recorded), describe="the event log to catch up")
    assert written() == recorded


def test_a_node_gone_for_longer_than_the_timeout_loses_its_jobs_and_stops_them_when_back() -> None:
    """1. Two jobs run, one of which may not run again (--no-requeue). 2. Their execd is killed
    and stays away longer than node_timeout_s: the rerunnable one goes back to the queue, the
    other ends NODE_FAIL, and their CPUs are free. 3. The execd comes back: the attempts it
    still runs are stopped, so nothing runs unaccounted, and the requeued job runs again as
    attempt 2, which completes; attempt 1's late report counts nowhere."""
    cluster = LocalCluster(config_toml="[controller]\nnode_timeout_s = 1.0\n")
    try:
        cluster.start()
        script = 'if [ "$DROVER_ATTEMPT" = 1 ]; then sleep 300; fi; echo "attempt $DROVER_ATTEMPT" > again.out'
        again = cluster.submit("--", "bash", "-c", script)
        once = cluster.submit("--no-requeue", "--", "sleep", "300")
        for job in (again, once):
            wait_until(lambda job=job: cluster.drover_json("show", str(job))["state"] == "running", describe="running")
        cluster.kill("execd")
        wait_until(lambda: cluster.drover_json("show", str(once))["state"] == "node_fail", describe="NODE_FAIL")
        assert cluster.drover_json("show", str(again))["state"] == "pending"
        cluster.start_execd()
        wait_until(lambda: len([e for e in cluster.drover_json("events") if e["kind"] == "stray_attempt_stopped"]) == 2,
                   describe="both stray attempts stopped")
        cluster.drover("wait", str(again), timeout=60)
        shown = cluster.drover_json("show", str(again))
        attempts = shown["tasks"][0]["attempts"]
        assert shown["state"] == "completed" and [a["number"] for a in attempts] == [1, 2]
        assert attempts[0]["failure"] == "node vm was lost".replace("vm", attempts[0]["node"])
        assert (cluster.workdir / "again.out").read_text() == "attempt 2\n"
        for job in (again, once):
            wait_until(lambda job=job: not list(cluster.spool.glob(f"{job}.0.1")), describe="attempt 1's spool cleaned up")
        assert cluster.drover_json("show", str(once))["state"] == "node_fail"
    finally:
        assert not cluster.stop()


@pytest.fixture
def eight_cpus(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    yield from serve(request, LocalCluster(cpus=8))


def test_a_node_back_with_fewer_cpus_than_its_running_jobs_hold_fails_nothing(eight_cpus: LocalCluster) -> None:
    """1. A node of 8 CPUs runs six jobs; two are cancelled (CPUs 0 and 1 free). 2. kill -9 the
    execd and start it offering 2 CPUs: four jobs run on a node of two. 3. Five more jobs are
    submitted: none fails; they wait for CPUs, and run once the four running jobs end."""
    cluster = eight_cpus
    release = cluster.workdir / "go"
    running = [cluster.submit("--", "bash", "-c", f"while [ ! -e {release} ]; do sleep 0.05; done")
               for _ in range(6)]
    wait_until(lambda: all(cluster.drover_json("show", str(j))["state"] == "running" for j in running),
               describe="six jobs running")
    cluster.drover("cancel", *map(str, running[:2]))
    wait_until(lambda: all(cluster.drover_json("show", str(j))["state"] == "cancelled" for j in running[:2]),
               describe="two jobs cancelled")
    cluster.kill("execd")
    cluster.cpus = 2
    cluster.start_execd()
    wait_until(lambda: [n.cpus for n in cluster.client().nodes()] == [2], describe="the node to offer 2 CPUs")
    later = [cluster.submit("--", "true") for _ in range(5)]

    def planned() -> dict[int, Any] | None:
        shown = {j: cluster.drover_json("show", str(j)) for j in later}
        return shown if all(job["pending_reason"] or job["state"] != "pending" for job in shown.values()) else None

    states = wait_until(planned, describe="a planner pass over the new jobs")
    assert [job["state"] for job in states.values()] == ["pending"] * 5, states
    assert {job["pending_reason"] for job in states.values()} <= {"resources", "priority"}, states
    release.touch()
    assert cluster.drover("wait", *map(str, running[2:] + later)).returncode == 0
    assert all(cluster.drover_json("show", str(j))["state"] == "completed" for j in running[2:] + later)
