"""Allocation queues (`drover alloc`, /v1/alloc/queues) are the admins' alone: they spend the
site's allocation time. On a shared cluster of hosts (a root controller serving TLS, so that
allocation queues can be had), root adds one; then an ordinary user, on the controller's host
(the local socket) and on a joined host (a MUNGE credential over TLS), can neither list, see,
add, pause, resume nor remove one, and learns nothing of it, not even whether it is there; and
anyone who reaches the TLS port without a credential gets a bare refusal on every endpoint and
method of /v1/alloc/."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import pytest
from tests.helpers.munge import Munged
from tests.helpers.munge_cluster import hosts_with_munge
from tests.helpers.netns import PORT, Hosts
from tests.helpers.system_install import SystemInstall
from tests.helpers.users import LOGIN_PATH, run_as_user

SECRETS = ("secretpart", "secretq", "secretacct")  # what the queue says of the site's allocations
ADMIN_ONLY = "only root and the cluster's operators"


@pytest.fixture
def hosts(users: tuple[str, str], system_install: SystemInstall) -> Iterator[tuple[Hosts, Munged]]:
    with hosts_with_munge(["node1"], python=system_install.python) as made:
        yield made


def queue_of_root(hosts: Hosts) -> dict[str, object]:
    shown = hosts.ctl.drover("alloc", "info", "1", "--json")
    return json.loads(shown.stdout)  # type: ignore[no-any-return]


def test_an_ordinary_user_can_neither_see_nor_change_an_allocation_queue(
        hosts: tuple[Hosts, Munged], users: tuple[str, str], system_install: SystemInstall) -> None:
    cluster, _ = hosts
    alice, _ = users
    added = cluster.ctl.drover("alloc", "add", "slurm", "--partition", SECRETS[0], "--name", SECRETS[1],
                               "--max-workers", "2", "--json", "--", f"--account={SECRETS[2]}")
    assert json.loads(added.stdout)["id"] == 1, added.stdout
    # The controller's host lets its users reach the local socket, as a shared cluster's does.
    os.chmod(cluster.ctl.state_dir, 0o711)
    path = f"{system_install.bindir}:{LOGIN_PATH}"
    where = {
        "the controller's host": (cluster.ctl.command(), {"PATH": path, "DROVER_SOCKET": str(cluster.ctl.state_dir / "api.sock")}),
        "a joined host": (cluster.nodes["node1"].command(),
                          {"PATH": path, "DROVER_CLUSTER_FILE": str(cluster.nodes["node1"].state_dir / "cluster.json")}),
    }
    for host, (prefix, env) in where.items():
        ping = run_as_user(alice, ["drover", "status"], prefix=prefix, env=env)
        assert ping.returncode == 0, (host, ping.stderr)  # she is a user of the cluster there
        refusals = {}
        for argv in (["list"], ["info", "1"], ["info", "2"], ["pause", "1"], ["resume", "1"], ["remove", "1"],
                     ["remove", "2"], ["add", "slurm", "--name", "hers"]):
            refused = run_as_user(alice, ["drover", "alloc", *argv, "--json"], prefix=prefix, env=env)
            assert refused.returncode != 0, (host, argv, refused.stdout)
            assert ADMIN_ONLY in refused.stderr, (host, argv, refused.stderr)
            assert not any(secret in refused.stdout + refused.stderr for secret in SECRETS), (host, argv)
            refusals[" ".join(argv)] = refused.stderr
        # The cluster's event log, which says who added which queue, is the admins' too.
        events = run_as_user(alice, ["drover", "events", "--json"], prefix=prefix, env=env)
        assert events.returncode != 0 and ADMIN_ONLY in events.stderr, (host, events.stdout, events.stderr)
        # Whether queue 1 is there or queue 2 is not, she is told the same.
        assert refusals["info 1"] == refusals["info 2"] and refusals["remove 1"] == refusals["remove 2"], refusals
    queue = queue_of_root(cluster)
    assert (queue["state"], queue["name"], queue["created_by"]) == ("active", SECRETS[1], "root"), queue
    cluster.ctl.drover("alloc", "pause", "1")
    for prefix, env in where.values():
        assert run_as_user(alice, ["drover", "alloc", "resume", "1"], prefix=prefix, env=env).returncode != 0
    assert queue_of_root(cluster)["state"] == "paused"
    listed = json.loads(cluster.ctl.drover("alloc", "list", "--json").stdout)
    assert [q["id"] for q in listed if q["state"] != "removed"] == [1], listed
    assert "hers" not in json.dumps(listed)


# Each request on a connection of its own, with no credential (or a forged one), as anyone who
# reaches the port may send it; the status line, the body, and whether the connection was closed.
RAW = """
import json, socket, ssl, sys
host, port, ca = sys.argv[1:4]
context = ssl.create_default_context(cafile=ca)
context.check_hostname = False
answers = []
for method, path, credential in json.loads(sys.argv[4]):
    body = b'{"manager": "slurm", "name": "theirs"}' if method in ("POST", "PUT", "PATCH") else b""
    head = f"{method} {path} HTTP/1.1\\r\\nHost: drover\\r\\nConnection: close\\r\\nContent-Type: application/json\\r\\n"
    if credential:
        head += f"X-Drover-Credential: {credential}\\r\\n"
    head += f"Content-Length: {len(body)}\\r\\n\\r\\n"
    with context.wrap_socket(socket.create_connection((host, int(port)), timeout=10)) as s:
        s.sendall(head.encode() + body)
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    status, _, rest = reply.partition(b"\\r\\n")
    answers.append([method, path, credential, status.decode(), rest.partition(b"\\r\\n\\r\\n")[2].decode(errors="replace")])
print(json.dumps(answers))
"""


def test_anyone_reaching_the_tls_port_without_a_credential_gets_a_bare_refusal_on_every_alloc_endpoint(
        hosts: tuple[Hosts, Munged]) -> None:
    cluster, _ = hosts
    cluster.ctl.drover("alloc", "add", "slurm", "--partition", SECRETS[0], "--name", SECRETS[1],
                       "--", f"--account={SECRETS[2]}")
    declared = [("POST", "/v1/alloc/queues"), ("GET", "/v1/alloc/queues")]
    for queue in ("1", "2", "0", "x"):  # there, not there, and not a queue's id
        declared += [("GET", f"/v1/alloc/queues/{queue}"), ("POST", f"/v1/alloc/queues/{queue}/pause"),
                     ("POST", f"/v1/alloc/queues/{queue}/resume"), ("DELETE", f"/v1/alloc/queues/{queue}")]
    undeclared = [("PUT", "/v1/alloc/queues"), ("DELETE", "/v1/alloc/queues"), ("PATCH", "/v1/alloc/queues/1"),
                  ("GET", "/v1/alloc/queues/1/pause"), ("PUT", "/v1/alloc/queues/1/resume"), ("GET", "/v1/alloc"),
                  ("GET", "/v1/alloc/queues/1/allocations")]
    requests = [[method, path, credential] for method, path in declared + undeclared
                for credential in ("", "MUNGE:forged")]
    node1 = cluster.nodes["node1"]
    sent = subprocess.run([*node1.command(), node1.interpreter, "-c", RAW, cluster.ctl.address, str(PORT),
                           str(cluster.ctl.state_dir / "tls" / "ca.crt"), json.dumps(requests)],
                          capture_output=True, text=True, timeout=120)
    assert sent.returncode == 0, sent.stderr
    for method, path, credential, status, body in json.loads(sent.stdout):
        said = (method, path, credential, status, body)
        assert not any(secret in body for secret in SECRETS), said
        if (method, path) in declared:
            assert status == "HTTP/1.1 403 Forbidden", said
            assert json.loads(body)["kind"] == "forbidden", said
        else:  # no such endpoint: the same answer whatever queue it names
            assert status in ("HTTP/1.1 404 Not Found", "HTTP/1.1 405 Method Not Allowed"), said
    answers = {(m, p, c): (s, b) for m, p, c, s, b in json.loads(sent.stdout)}
    for method, path in declared:
        if "/2" in path:  # a queue that is not there is refused as one that is
            assert answers[method, path, ""] == answers[method, path.replace("/2", "/1"), ""]
    assert queue_of_root(cluster)["state"] == "active"
    listed = json.loads(cluster.ctl.drover("alloc", "list", "--json").stdout)
    assert [q["id"] for q in listed] == [1] and "theirs" not in json.dumps(listed), listed
    log = cluster.controller_log()
    assert "added allocation queue 2" not in log and "alloc_queue_paused" not in log
