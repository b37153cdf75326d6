"""Two controllers on one PostgreSQL store, one node (tests/helpers/ha_cluster.py): the cluster
outlives its active controller.

- kill -9 of the active controller while jobs run and wait: the standby serves within 10 s; the
  running jobs go on under the same shepherds and finish; every exit is recorded once; the
  waiting jobs start; users' commands and the node follow the new active controller.
- A standby answers a user who reaches it alone with an error that names the active one.
- Fencing: the active controller whose lock's session is ended from outside stops (exit 1),
  acknowledges nothing more, and the standby takes over.
- The PostgreSQL server restarted while jobs run: commands get clear errors meanwhile, and
  afterwards one controller goes on with every job, none lost, none recorded twice.
- A submission the active controller committed and never answered (it died first), sent again
  by `drover submit` with its request key, gets the same ids from the new active controller:
  its jobs exist once. The same through the client API after a kill -9 of the active one.
"""

from __future__ import annotations

import json
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.ha_cluster import HaCluster
from tests.helpers.postgres import PrivateServer, Unavailable
from tests.helpers.requests_waiting import requests_waiting
from tests.helpers.wait import wait_until

from drover.client import Client
from drover.controller.faults import EXIT_AFTER_SUBMIT

FAILOVER_LIMIT_S = 10.0


@contextmanager
def _cluster(request: pytest.FixtureRequest, url: str, faults_of_a: dict[str, str] | None = None,
             controller_toml: str = "") -> Iterator[HaCluster]:
    """`faults_of_a`: the first controller's fault injection (drover/controller/faults.py)."""
    with HaCluster(url, controller_toml=controller_toml) as cluster:
        try:
            cluster.env.update(faults_of_a or {})
            cluster.start_controller("a")
            for name in faults_of_a or {}:
                del cluster.env[name]
            cluster.wait_role("a", "active")
            cluster.start_controller("b")
            cluster.wait_role("b", "standby")
            cluster.start_execd()
            cluster.wait_node_up()
            yield cluster
        finally:
            report = getattr(request.node, "rep_call", None)
            if report is None or report.failed:
                print(cluster.logs())


@pytest.fixture
def ha(request: pytest.FixtureRequest, postgres_url: str) -> Iterator[HaCluster]:
    with _cluster(request, postgres_url) as cluster:
        yield cluster


def store_rows(url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        return [tuple(row) for row in connection.execute(sql, args)]


def assert_recorded_once(url: str, jobs: list[int]) -> None:
    """One attempt per job, with its exit recorded; no attempt's end logged twice."""
    attempts = store_rows(url, "SELECT job_id, number, exit IS NOT NULL FROM attempts WHERE job_id = ANY(%s) "
                               "ORDER BY job_id", jobs)
    assert [(job, 1, True) for job in sorted(jobs)] == attempts
    twice = store_rows(url, "SELECT job_id, idx, attempt, kind, COUNT(*) FROM events WHERE job_id = ANY(%s) "
                            "AND kind IN ('exited', 'completed', 'failed', 'job_ended') "
                            "GROUP BY job_id, idx, attempt, kind HAVING COUNT(*) > 1", jobs)
    assert twice == []
    seqs = [row[0] for row in store_rows(url, "SELECT seq FROM events ORDER BY seq")]
    assert seqs == list(range(1, len(seqs) + 1))  # numbered on, without a gap or a repeat, across controllers


def two_running_two_waiting(cluster: HaCluster) -> tuple[Path, list[int], list[int]]:
    """Two jobs running on the node's two CPUs until the file `gate` exists (however slow the
    machine), and two waiting behind them: (the gate, the running, the waiting)."""
    gate = cluster.workdir / "gate"
    running_jobs = [cluster.submit("--", "sh", "-c", f"until [ -e {gate} ]; do sleep 0.05; done; echo done")
                    for _ in range(2)]
    wait_until(lambda: running(cluster, running_jobs), describe="two jobs running")
    return gate, running_jobs, [cluster.submit("--", "sh", "-c", "echo later") for _ in range(2)]


def running(cluster: HaCluster, jobs: list[int]) -> bool:
    return all(cluster.json("show", str(job))["state"] == "running" for job in jobs)


def test_the_standby_takes_over_when_the_active_controller_is_killed(ha: HaCluster, postgres_url: str) -> None:
    """1. Two jobs run (one CPU each, the node has two), two wait. 2. The standby, asked alone,
    names the active controller. 3. kill -9 the active one. 4. `drover status` with both
    sockets answers within 10 s. 5. The same shepherds run the same jobs; all four finish, each
    recorded once; the node is back on the new controller; a new submission runs."""
    cluster = ha
    gate, running_jobs, waiting = two_running_two_waiting(cluster)
    shepherds = cluster.shepherds()
    assert len(shepherds) == 2

    refused = cluster.drover("status", sockets=cluster.socket("b"), check=False)
    assert refused.returncode == 2
    assert f"the controller at {cluster.url('b')} is a standby; the active controller is at {cluster.url('a')}" \
        in refused.stderr
    assert "Traceback" not in refused.stderr
    assert cluster.health("b") == {"role": "standby", "address": cluster.url("b"), "active": cluster.url("a")}

    killed_at = time.monotonic()
    cluster.kill("a")
    status = cluster.drover("status", "--json")  # both sockets: it finds the new active controller
    failover_s = time.monotonic() - killed_at
    print(f"failover: drover status answered {failover_s:.2f}s after kill -9")
    assert failover_s < FAILOVER_LIMIT_S
    assert {job["id"] for job in json.loads(status.stdout)} >= {*running_jobs, *waiting}
    assert cluster.health("b")["role"] == "active"
    # The jobs still run, under the shepherds they had: nothing was restarted.
    assert cluster.shepherds() == shepherds and all(Path(f"/proc/{pid}").exists() for pid in shepherds.values())
    gate.touch()

    cluster.drover("wait", *map(str, running_jobs + waiting), timeout=60)
    for job in running_jobs:
        assert (cluster.workdir / f"drover-{job}.out").read_text() == "done\n"
    assert [cluster.json("show", str(job))["state"] for job in running_jobs + waiting] == ["completed"] * 4
    assert_recorded_once(postgres_url, running_jobs + waiting)
    cluster.wait_node_up()
    later = cluster.submit("--", "true")
    cluster.drover("wait", str(later))
    assert cluster.log("node").count("joined the cluster as node node1") == 2  # once to each controller


def test_promises_held_by_the_node_outlive_the_active_controller(request: pytest.FixtureRequest,
                                                                  postgres_url: str) -> None:
    """[scheduler] promises: two jobs run on the node's two CPUs until their gates open, and a
    job is promised behind each. kill -9 of the active controller: the standby finds both
    promises (the attempts' `after`), a cancel through it takes one back before it starts, and
    when the gate of the job the other follows opens the node starts it, and it runs once; every
    attempt is recorded once. (The other gate opens after it: a room freed beside a promise
    would start the promise there in place, docs/scheduling.md, which is not what this test is about.)"""
    with _cluster(request, postgres_url, controller_toml="[scheduler]\npromises = true\n") as cluster:
        gates = [cluster.workdir / "gate-1", cluster.workdir / "gate-2"]
        first = [cluster.submit("--", "sh", "-c", f"until [ -e {gate} ]; do sleep 0.05; done") for gate in gates]
        wait_until(lambda: running(cluster, first), describe="two jobs running")
        promised = [cluster.submit("--", "sh", "-c", "echo ran") for _ in range(2)]
        wait_until(lambda: all(cluster.json("show", str(job))["tasks"][0]["attempts"][-1]["after"]
                               for job in promised if cluster.json("show", str(job))["tasks"][0]["attempts"]),
                   describe="both jobs promised")
        afters = [cluster.json("show", str(job))["tasks"][0]["attempts"][0]["after"] for job in promised]
        assert set(afters) == {f"{job}.0.1" for job in first}
        cluster.kill("a")
        cluster.drover("status")  # both sockets: the standby takes over
        assert cluster.health("b")["role"] == "active"
        (attempt,) = cluster.json("show", str(promised[1]))["tasks"][0]["attempts"]
        assert attempt["after"] is not None and attempt["started_at"] is None, json.dumps(attempt)  # still promised
        cluster.drover("cancel", str(promised[1]))
        wait_until(lambda: cluster.json("show", str(promised[1]))["state"] == "cancelled", describe="the cancel")
        followed = first.index(int(afters[0].split(".")[0]))
        gates[followed].touch()
        cluster.drover("wait", str(first[followed]), str(promised[0]), timeout=60)
        gates[1 - followed].touch()
        cluster.drover("wait", *map(str, first), timeout=60)
        assert (cluster.workdir / f"drover-{promised[0]}.out").read_text() == "ran\n"
        assert not (cluster.workdir / f"drover-{promised[1]}.out").exists()
        assert_recorded_once(postgres_url, first + promised)


def test_a_controller_cut_off_from_its_lock_stops_and_the_standby_takes_over(ha: HaCluster,
                                                                              postgres_url: str) -> None:
    """1. A job takes the whole node, another waits. 2. The active controller's lock session
    is ended (pg_terminate_backend). 3. It exits 1 and says why; what it acknowledged is in the
    store. 4. The standby serves; the running job goes on and finishes, the waiting one starts
    once, on the new controller."""
    cluster = ha
    first = cluster.submit("-c", "2", "--", "sh", "-c", "sleep 3")
    wait_until(lambda: running(cluster, [first]), describe="the first job running")
    second = cluster.submit("-c", "2", "--", "true")
    shepherds = cluster.shepherds()

    (holder,) = store_rows(postgres_url, "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
                                         "AND classid = 1685221238 AND objid = 1")
    store_rows(postgres_url, "SELECT pg_terminate_backend(%s)", holder[0])
    # Whatever controller "a" still acknowledges from now on must be in the store.
    acknowledged = []
    for _ in range(5):
        result = cluster.drover("submit", "--parsable", "--", "true", sockets=cluster.socket("a"), check=False)
        if result.returncode == 0:
            acknowledged.append(int(result.stdout.split()[0]))
        else:
            assert "Traceback" not in result.stderr and result.returncode == 2
    process = cluster.processes["a"]
    assert process.wait(timeout=15) == 1
    assert "no longer the active controller" in cluster.log("a")
    cluster.processes.pop("a")
    cluster.wait_role("b", "active")
    for job in acknowledged:
        assert store_rows(postgres_url, "SELECT id FROM jobs WHERE id = %s", job) == [(job,)]

    cluster.drover("wait", str(first), str(second), *map(str, acknowledged), timeout=60)
    assert {name: pid for name, pid in cluster.shepherds().items() if name in shepherds} in (shepherds, {})
    assert_recorded_once(postgres_url, [first, second, *acknowledged])


def test_a_wait_on_the_active_controller_goes_on_at_the_next_one_when_it_stops(ha: HaCluster) -> None:
    """1. `drover wait` (both controllers' addresses) waits on the active controller for a job
    that runs. 2. The active controller is stopped (SIGTERM): it answers the waiting request as a
    standby would, and the client asks the other, which takes over. 3. The wait ends when the job
    does, exit 0 (not the server's own cut-off, an HTTP 500)."""
    cluster = ha
    gate = cluster.workdir / "gate"  # the job ends once the wait has moved to the next controller
    job = cluster.submit("--", "sh", "-c", f"until [ -e {gate} ]; do sleep 0.05; done")
    wait_until(lambda: cluster.json("show", str(job))["state"] == "running", describe="the job running")
    waiting = subprocess.Popen([sys.executable, "-m", "drover", "wait", str(job)], env=cluster.env,
                               cwd=cluster.workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: requests_waiting(cluster.socket("a")) == 1, timeout=60,
                   describe="the wait waiting on controller a")
        assert cluster.kill("a", signal.SIGTERM) == 0
        wait_until(lambda: requests_waiting(cluster.socket("b")) == 1, timeout=60,
                   describe="the wait waiting on controller b")
        assert waiting.poll() is None  # it went on, and waits for the job still
        gate.touch()
        out, err = waiting.communicate(timeout=90)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait()
    assert waiting.returncode == 0, f"drover wait exited {waiting.returncode}: {err}"
    assert cluster.health("b")["role"] == "active"
    assert cluster.json("show", str(job))["state"] == "completed"


def test_the_node_goes_on_at_the_next_controller_when_the_active_one_stops(ha: HaCluster, postgres_url: str) -> None:
    """1. Two jobs run on the node (over TLS) until a gate opens, two wait. 2. The active
    controller is stopped (SIGTERM): it exits 0, and all the node gets from it from then on is
    its channel closed, or a refusal in a standby's words; the node joins the other controller,
    which takes over. 3. The same shepherds run the same jobs; once the gate opens all four
    finish, each run and recorded once."""
    cluster = ha
    gate, running_jobs, waiting = two_running_two_waiting(cluster)
    shepherds = cluster.shepherds()
    assert len(shepherds) == 2
    before = len(cluster.log("node").splitlines())

    assert cluster.kill("a", signal.SIGTERM) == 0
    wait_until(lambda: "joined the cluster as node node1" in "\n".join(cluster.log("node").splitlines()[before:]),
               timeout=60, describe="the node to join the next controller")
    cluster.wait_role("b", "active")
    assert cluster.shepherds() == shepherds
    since_the_stop = cluster.log("node").splitlines()[before:]
    from_a = [line for line in since_the_stop if cluster.url("a") in line]
    assert from_a, since_the_stop
    for line in from_a:  # its channel closed or lost, or a standby's refusal; nothing else
        assert f"controller channel to {cluster.url('a')}: " in line or "refused it (HTTP 503)" in line, line
    gate.touch()

    cluster.drover("wait", *map(str, running_jobs + waiting), timeout=60)
    assert [cluster.json("show", str(job))["state"] for job in running_jobs + waiting] == ["completed"] * 4
    for job in running_jobs:
        assert (cluster.workdir / f"drover-{job}.out").read_text() == "done\n"
    for job in waiting:
        assert (cluster.workdir / f"drover-{job}.out").read_text() == "later\n"
    assert_recorded_once(postgres_url, running_jobs + waiting)
    for name in ("a", "node"):
        assert "Traceback" not in cluster.log(name), cluster.log(name)


def _tls_to(cluster: HaCluster, name: str) -> ssl.SSLSocket:
    """A TLS connection to a controller's port, as anyone who can reach it makes one: no client
    certificate, no MUNGE credential."""
    context = ssl.create_default_context(cafile=str(cluster.state[name] / "tls" / "ca.crt"))
    context.check_hostname = False
    return context.wrap_socket(socket.create_connection(("127.0.0.1", cluster.ports[name]), timeout=10))


def _all_of(connection: socket.socket) -> bytes:
    """What the peer reads until the controller closes the connection."""
    received = b""
    try:
        while chunk := connection.recv(65536):
            received += chunk
    except OSError:  # reset, or a TLS close without its alert
        pass
    finally:
        connection.close()
    return received


def test_peers_without_a_credential_get_nothing_but_a_standbys_answer_from_a_stopping_controller(
        ha: HaCluster) -> None:
    """Peers that showed no credential are connected to the active controller when it stops: one
    that never began its TLS handshake, one half way through a request's header, one idle after
    a request it was refused. Others keep asking while it stops. The controller exits 0 within
    its grace time, not held by any of them; each gets its connection closed, or a 503 of kind
    standby: never a job's data, a traceback or a 500."""
    cluster = ha
    secret = "only-its-owner-sees-this-name"
    job = cluster.submit("--hold", "--name", secret, "--", "true")
    request = f"GET /v1/jobs/{job} HTTP/1.1\r\nHost: drover\r\n\r\n".encode()
    silent = socket.create_connection(("127.0.0.1", cluster.ports["a"]), timeout=10)
    half = _tls_to(cluster, "a")
    half.sendall(b"GET /v1/jobs HTTP/1.1\r\nHost: drover\r\n")
    idle = _tls_to(cluster, "a")
    idle.sendall(request)
    refused = b""
    while b"}" not in refused:  # its one-line JSON refusal, whole
        refused += idle.recv(65536)
    assert refused.split(b" ", 2)[1] in (b"401", b"403") and secret.encode() not in refused, refused

    process = cluster.processes.pop("a")
    stopped_at = time.monotonic()
    process.send_signal(signal.SIGTERM)
    answers = []
    while process.poll() is None and time.monotonic() - stopped_at < 30:
        try:
            asking = _tls_to(cluster, "a")
            asking.sendall(request.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
        except OSError:
            continue  # it no longer listens
        answers.append(_all_of(asking))
    assert process.wait(timeout=30) == 0
    stop_s = time.monotonic() - stopped_at
    print(f"the controller stopped {stop_s:.2f}s after SIGTERM; {len(answers)} requests asked meanwhile, answered "
          f"{sorted({answer[:12].decode() or 'closed' for answer in answers})}")
    assert stop_s < 10
    for received in [_all_of(silent), _all_of(half), _all_of(idle), *answers]:
        assert secret.encode() not in received and b"Traceback" not in received, received
        if received:
            head, _, body = received.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 503 ") and json.loads(body)["kind"] == "standby", received
    assert "Traceback" not in cluster.log("a"), cluster.log("a")


def test_a_submission_committed_by_a_controller_that_died_before_answering_is_made_once(
        request: pytest.FixtureRequest, postgres_url: str) -> None:
    """1. The active controller commits a submission of an array of three tasks and exits before
    it answers (an injected fault). 2. `drover submit`, its connection lost, sends the request
    again with its request key; the standby takes over and answers with the id the first one
    committed. 3. The store holds that one job, which runs its three tasks once."""
    with _cluster(request, postgres_url, {EXIT_AFTER_SUBMIT: "1"}) as cluster:
        marks = cluster.workdir / "marks"
        job = cluster.submit("--array", "0-2", "--", "sh", "-c", f"echo $DROVER_ARRAY_TASK_ID >> {marks}")
        assert cluster.processes["a"].wait(timeout=30) == 1
        assert "injected fault" in cluster.log("a")
        cluster.processes.pop("a")
        assert cluster.health("b")["role"] == "active"
        assert store_rows(postgres_url, "SELECT id FROM jobs") == [(job,)]
        assert store_rows(postgres_url, "SELECT k.owner = j.owner, k.job_ids FROM submission_keys k "
                                        "JOIN jobs j ON j.id = %s", job) == [(True, f"[{job}]")]
        cluster.drover("wait", str(job), timeout=60)
        assert sorted(marks.read_text().split()) == ["0", "1", "2"]  # each task ran once
        assert_recorded_once_by_task(postgres_url, job, 3)


def test_a_submission_sent_again_through_the_client_after_a_failover_gets_the_same_ids(ha: HaCluster,
                                                                                        postgres_url: str) -> None:
    """The client API with a key of its own: answered by the active controller, which is then
    killed (-9); the same request to the new active controller returns the same ids."""
    cluster = ha
    body = {"jobs": [{"script": "#!/bin/sh\ntrue\n", "workdir": str(cluster.workdir)}] * 2,
            "request_key": "retried-0123456789"}
    with Client(cluster.socket("a"), timeout_s=30) as client:
        first = client.transport.call("POST", "/v1/jobs", body)["ids"]
    cluster.kill("a")
    cluster.wait_role("b", "active")
    with Client(cluster.socket("b"), timeout_s=30) as client:
        again = client.transport.call("POST", "/v1/jobs", body)["ids"]
    assert again == first and len(first) == 2
    assert store_rows(postgres_url, "SELECT id FROM jobs ORDER BY id") == [(job,) for job in first]
    cluster.drover("wait", *map(str, first), timeout=60)


def assert_recorded_once_by_task(url: str, job: int, tasks: int) -> None:
    """Each task of the job has one attempt, its exit recorded; the job ended once."""
    attempts = store_rows(url, "SELECT idx, number, exit IS NOT NULL FROM attempts WHERE job_id = %s ORDER BY idx",
                          job)
    assert attempts == [(index, 1, True) for index in range(tasks)]
    assert store_rows(url, "SELECT COUNT(*) FROM events WHERE job_id = %s AND kind = 'job_ended'", job) == [(1,)]


@pytest.fixture
def own_server() -> Iterator[PrivateServer]:
    """A PostgreSQL server of this test's own: it is stopped and started under load."""
    try:
        server = PrivateServer().start()
    except Unavailable as why:
        pytest.skip(f"no private PostgreSQL server: {why}")
    yield server
    server.stop()


def test_the_store_restarted_under_load_loses_nothing(request: pytest.FixtureRequest,
                                                     own_server: PrivateServer) -> None:
    """1. Jobs run and wait. 2. The server stops: a submission gets a clear error (exit 2, no
    traceback), a status is answered or refused as clearly. 3. It starts again: a controller is active (the same, or the standby), every
    job finishes, each recorded once."""
    url = own_server.url(own_server.create_database())
    with _cluster(request, url) as cluster:
        gate = cluster.workdir / "gate"  # the running jobs end once it is there, while the store is away
        jobs = [cluster.submit("--", "sh", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done") for _ in range(6)]
        wait_until(lambda: running(cluster, jobs[:2]), describe="two jobs running")
        own_server.pause()
        ending = [spool for spool in cluster.spool.iterdir() if (spool / "job_pid").exists()]
        gate.touch()
        try:
            # A status is read from the active controller's memory, still the truth (no other
            # controller can take over while the store is away); a submission cannot be committed.
            status = cluster.drover("status", check=False, timeout=90)
            assert "Traceback" not in status.stderr and status.returncode in (0, 2), status.stderr
            refused = cluster.drover("submit", "--", "true", check=False, timeout=90)
            assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
            assert "PostgreSQL" in refused.stderr, refused.stderr
            # jobs end while the store is away: their reports wait on the node
            wait_until(lambda: ending and all(not spool.exists() or (spool / "exit_status").exists()
                                              for spool in ending),
                       timeout=60, describe="the running jobs to end while the store is away")
        finally:
            own_server.resume()
        wait_until(lambda: cluster.drover("status", check=False).returncode == 0, timeout=30,
                   describe="a controller serving again")
        cluster.drover("wait", *map(str, jobs), timeout=90)
        assert_recorded_once(url, jobs)
        later = cluster.submit("--", "true")
        cluster.drover("wait", str(later))
        actives = [name for name in ("a", "b") if name in cluster.processes
                   and cluster.processes[name].poll() is None and cluster.health(name)["role"] == "active"]
        assert len(actives) == 1
        for name in ("a", "b"):  # a controller that stopped did so saying why, never by crashing
            process = cluster.processes.get(name)
            if process is not None and process.poll() is not None:
                assert process.returncode == 1 and "no longer the active controller" in cluster.log(name)
                cluster.processes.pop(name)
        cluster.kill("node", signal.SIGTERM)


def test_reads_are_answered_from_memory_while_the_store_restarts(request: pytest.FixtureRequest,
                                                                 own_server: PrivateServer) -> None:
    """1. Jobs run, one waits held. 2. The server stops: `drover status`, `show` and `nodes` are
    answered from the active controller's memory, as they were; a submission is refused (exit 2,
    naming PostgreSQL). 3. It starts again: the jobs go on."""
    url = own_server.url(own_server.create_database())
    with _cluster(request, url) as cluster:
        flag = cluster.root / "go"
        jobs = [cluster.submit("--", "sh", "-c", f"while [ ! -e {flag} ]; do sleep 0.05; done") for _ in range(2)]
        held = cluster.submit("--hold", "--", "true")
        wait_until(lambda: running(cluster, jobs), describe="the jobs running")
        before = {job: cluster.json("show", str(job))["state"] for job in [*jobs, held]}
        own_server.pause()
        try:
            first = cluster.drover("show", "--json", str(jobs[0]), check=False, timeout=30)
            assert first.returncode == 0 and json.loads(first.stdout)["state"] == "running", first.stderr
            refused = cluster.drover("submit", "--", "true", check=False, timeout=90)
            assert refused.returncode == 2 and "PostgreSQL" in refused.stderr, refused.stderr
            # The refused submission's job is not shown: it was never acknowledged.
            status = cluster.drover("status", "--json", check=False, timeout=30)
            assert status.returncode == 0, status.stderr
            assert {job["id"]: job["state"] for job in json.loads(status.stdout)} == before
            for job in [*jobs, held]:
                shown = cluster.drover("show", "--json", str(job), check=False, timeout=30)
                assert shown.returncode == 0, shown.stderr
                assert json.loads(shown.stdout)["state"] == before[job]
            nodes = cluster.drover("nodes", "--json", check=False, timeout=30)
            assert nodes.returncode == 0 and [n["state"] for n in json.loads(nodes.stdout)] == ["up"], nodes.stderr
        finally:
            own_server.resume()
        flag.touch()
        # The server's restart ended the active controller's session: either controller may take
        # the leadership back first (on a loaded machine the standby often does), and a request
        # the first one took as it stopped is closed unanswered. A user releases again, as here.
        for _ in range(3):
            released = cluster.drover("release", str(held), check=False, timeout=90)
            if "closed the connection before it answered" not in released.stderr:
                break
        assert released.returncode == 0, released.stderr
        cluster.drover("wait", *map(str, [*jobs, held]), timeout=90)
