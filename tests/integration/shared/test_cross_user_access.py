"""Two real users on a shared cluster started the way docs/shared-machine.md says: nothing one user runs — the
installed `drover`, or raw HTTP on the socket with a spoofed owner, user or uid — sees or
changes the other's job. Each user sees their own; root sees all."""

from __future__ import annotations

import json
import pwd
import textwrap

import pytest
from tests.helpers.system_cluster import SystemCluster

# Run as the probing user with the install's python: each request on the cluster's socket, and
# what came back, as JSON lines. The user is whoever runs it; the bodies try to say otherwise.
_RAW_HTTP = textwrap.dedent('''
    import http.client, json, os, socket, sys

    class UnixConnection(http.client.HTTPConnection):
        def connect(self):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(os.environ["DROVER_SOCKET"])

    for method, path, body in json.loads(sys.stdin.read()):
        connection = UnixConnection("localhost", timeout=30)
        data = None if body is None else json.dumps(body).encode()
        connection.request(method, path, body=data, headers={"Content-Type": "application/json"})
        reply = connection.getresponse()
        print(json.dumps([method, path, reply.status, reply.read().decode(errors="replace")]))
        connection.close()
''')

_NODE_CHANNEL = textwrap.dedent('''
    import os
    from websockets.sync.client import unix_connect
    try:
        with unix_connect(os.environ["DROVER_SOCKET"], "ws://localhost/v1/nodes/channel") as ws:
            ws.send(b"[]")
            ws.recv(timeout=10)
        print("accepted")
    except Exception as error:
        print("refused:", type(error).__name__, error)
''')


@pytest.fixture
def two_jobs(system_cluster: SystemCluster, users: tuple[str, str]) -> tuple[int, int]:
    """A held job of each user: held, so it stays as it is unless someone changes it."""
    alice, bob = users
    return (system_cluster.submit_as(alice, "--hold", "--name", "alices", "--", "true"),
            system_cluster.submit_as(bob, "--hold", "--name", "bobs", "--", "true"))


def unchanged(cluster: SystemCluster, job: int) -> None:
    info = cluster.job(job)
    assert info["state"] == "held" and info["priority"] == 0, info
    kinds = [event["kind"] for event in json.loads(cluster.as_root("events", "--json", str(job)).stdout)]
    assert kinds == ["submitted"], kinds


def test_another_users_job_is_refused_to_every_command(system_cluster: SystemCluster, users: tuple[str, str],
                                                       two_jobs: tuple[int, int]) -> None:
    alice, bob = users
    alices, _ = two_jobs
    job = str(alices)
    commands = [
        ("show", job), ("cancel", job), ("hold", job), ("release", job), ("suspend", job), ("resume", job),
        ("requeue", job), ("checkpoint", job), ("alter", "--priority", "-5", job), ("signal", job, "USR1"),
        ("logs", job), ("events", job), ("fetch", job), ("wait", "--timeout", "5", job),
    ]
    for command in commands:
        # Claiming to be alice in the environment changes nothing: the kernel says who bob is.
        result = system_cluster.run_as(bob, "drover", *command, env={"USER": alice, "LOGNAME": alice})
        said = result.stdout + result.stderr
        assert result.returncode != 0, (command, said)
        assert f"job {alices} belongs to {alice}; {bob} cannot" in said, (command, said)
    unchanged(system_cluster, alices)


def test_listings_show_a_user_only_their_own_and_root_everything(system_cluster: SystemCluster,
                                                                 users: tuple[str, str],
                                                                 two_jobs: tuple[int, int]) -> None:
    alice, bob = users
    alices, bobs = two_jobs
    for user, own in ((alice, alices), (bob, bobs)):
        listed = system_cluster.run_as(user, "drover", "status", "--all", "--json")
        assert listed.returncode == 0, listed.stderr
        assert [job["id"] for job in json.loads(listed.stdout)] == [own]
    for command in (("status", "--user", alice), ("history", "--user", alice), ("events",)):
        refused = system_cluster.run_as(bob, "drover", *command)
        assert refused.returncode != 0, (command, refused.stdout)
        assert "only root and the cluster's operators" in refused.stderr, (command, refused.stderr)
    everyone = json.loads(system_cluster.as_root("status", "--json").stdout)
    assert sorted(job["id"] for job in everyone) == [alices, bobs]
    alices_only = json.loads(system_cluster.as_root("status", "--user", alice, "--json").stdout)
    assert [job["id"] for job in alices_only] == [alices]


def test_raw_http_as_another_user_with_spoofed_identities_is_refused(system_cluster: SystemCluster,
                                                                     users: tuple[str, str],
                                                                     two_jobs: tuple[int, int]) -> None:
    alice, bob = users
    alices, bobs = two_jobs
    alice_uid = pwd.getpwnam(alice).pw_uid
    home = pwd.getpwnam(bob).pw_dir
    job = {"script": "true\n", "workdir": home, "hold": True}
    forbidden = [
        ("GET", f"/v1/jobs/{alices}", None),
        ("GET", f"/v1/jobs/{alices}/wait?timeout=1", None),
        ("GET", f"/v1/jobs/{alices}/files", None),
        ("GET", f"/v1/jobs/{alices}/files/0/1/out.txt", None),
        ("GET", f"/v1/events?job={alices}", None),
        ("GET", "/v1/events", None),
        ("GET", f"/v1/jobs?user={alice}", None),
        ("GET", f"/v1/jobs?user={alice}&all=1", None),
        ("GET", f"/v1/history?user={alice}", None),
        ("POST", "/v1/nodes/anything/resume", None),
        ("POST", "/v1/shutdown", None),
    ]
    spoofed = [  # a request naming its sender is malformed, for anyone
        ("POST", "/v1/jobs", {"jobs": [{**job, "owner": alice}]}),
        ("POST", "/v1/jobs", {"jobs": [{**job, "user": alice}]}),
        ("POST", "/v1/jobs", {"jobs": [{**job, "uid": alice_uid, "gid": alice_uid}]}),
        ("POST", "/v1/jobs", {"jobs": [job], "owner": alice}),
        ("POST", "/v1/jobs/actions/cancel", {"refs": [str(alices)], "owner": alice}),
        ("POST", "/v1/jobs/actions/release", {"refs": [str(alices)], "uid": alice_uid}),
        ("POST", "/v1/jobs/actions/alter", {"refs": [str(alices)], "priority": 9, "user": alice}),
    ]
    per_job = [("POST", f"/v1/jobs/actions/{verb}", {"refs": [str(alices)], **extra})
               for verb, extra in (("cancel", {}), ("hold", {}), ("release", {}), ("signal", {"signal": "USR1"}),
                                   ("alter", {"priority": -9}), ("requeue", {}), ("suspend", {}))]
    own = [("GET", "/v1/jobs?all=1", None), ("GET", f"/v1/jobs?user={bob}", None), ("GET", "/v1/history", None)]
    probe = system_cluster.run_as(bob, system_cluster.install.python, "-c", _RAW_HTTP,
                                  input=json.dumps(forbidden + spoofed + per_job + own))
    assert probe.returncode == 0, probe.stderr
    answers = [json.loads(line) for line in probe.stdout.splitlines()]
    assert len(answers) == len(forbidden + spoofed + per_job + own)
    for method, path, status, body in answers[:len(forbidden)]:
        assert status == 403, (method, path, status, body)
    for method, path, status, body in answers[len(forbidden):len(forbidden + spoofed)]:
        assert status == 400 and "unknown field" in body, (method, path, status, body)
    for _, path, status, body in answers[len(forbidden + spoofed):-len(own)]:
        (result,) = json.loads(body)["results"]
        assert status == 200 and not result["ok"], (path, body)
        assert result["message"].startswith(f"job {alices} belongs to {alice}; {bob} cannot"), result
    for _, path, status, body in answers[-len(own):]:
        assert status == 200, (path, body)
        found = json.loads(body)
        owners = {row["owner"] for row in found.get("jobs", found.get("rows", []))}
        assert owners <= {bob}, (path, owners)
    assert [job["id"] for job in json.loads(answers[-3][3])["jobs"]] == [bobs]
    unchanged(system_cluster, alices)
    everyone = json.loads(system_cluster.as_root("status", "--json").stdout)
    assert sorted(job["id"] for job in everyone) == [alices, bobs]  # nothing was submitted in alice's name


def test_a_user_cannot_join_as_a_node(system_cluster: SystemCluster, users: tuple[str, str]) -> None:
    _, bob = users
    probe = system_cluster.run_as(bob, system_cluster.install.python, "-c", _NODE_CHANNEL)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.startswith("refused: InvalidStatus") and "403" in probe.stdout, probe.stdout
