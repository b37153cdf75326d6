"""What the controller refuses from another host, each refusal logged with the peer's address:
join tokens that are expired, used up, revoked or forged; a node certificate used under another
node's name; plain TCP; users' requests over TLS. Every attempt is made from inside the node's
network namespace, against the controller's address on its link."""

from __future__ import annotations

import json
import sys
import time

import pytest
from tests.helpers.netns import PORT, Hosts
from tests.helpers.wait import wait_until
from tests.integration.cluster.test_join import nodes, start_execd


def refused_join(hosts: Hosts, token: str, why: str) -> None:
    result = hosts.join("node1", token, check=False)
    assert result.returncode != 0, result.stdout
    assert why in result.stderr, result.stderr
    assert not (hosts.nodes["node1"].state_dir / "tls" / "node.crt").exists()
    wait_until(lambda: "refused a join from 10.213.0.2:" in hosts.controller_log()
               and why in hosts.controller_log(), describe="the refusal in the controller's log")


def test_an_expired_token_is_refused(hosts: Hosts) -> None:
    token = hosts.token("--ttl", "1s")
    time.sleep(1.2)
    refused_join(hosts, token, "has expired")


def test_a_used_up_token_is_refused(hosts: Hosts) -> None:
    token = hosts.token("--uses", "1")
    hosts.add_node("node2")
    hosts.join("node2", token)
    refused_join(hosts, token, "is used up")
    assert nodes(hosts) == {"node2": "up"}


def test_a_revoked_token_is_refused(hosts: Hosts) -> None:
    token = hosts.token()
    token_id = token.split(".")[2]
    hosts.ctl.drover("token", "revoke", token_id)
    listed = json.loads(hosts.ctl.drover("token", "list", "--json").stdout)
    assert [(t["id"], t["state"]) for t in listed] == [(token_id, "revoked")]
    refused_join(hosts, token, "was revoked")


@pytest.mark.parametrize("forge", ["secret", "id"])
def test_a_forged_token_is_refused(hosts: Hosts, forge: str) -> None:
    version, fingerprint, token_id, secret = hosts.token().split(".")
    if forge == "secret":
        secret = ("B" if secret[0] != "B" else "C") + secret[1:]
    else:
        token_id = "0" * 12 if token_id != "0" * 12 else "1" * 12
    refused_join(hosts, ".".join((version, fingerprint, token_id, secret)), "not valid (unknown or forged)")


def test_a_token_for_another_ca_is_refused_before_anything_is_sent(hosts: Hosts) -> None:
    version, fingerprint, token_id, secret = hosts.token().split(".")
    other = "0" * 64 if fingerprint != "0" * 64 else "1" * 64
    result = hosts.join("node1", ".".join((version, other, token_id, secret)), check=False)
    assert result.returncode != 0 and "not the token's" in result.stderr, result.stderr
    assert "refused a join" not in hosts.controller_log()  # the controller was never asked


def test_a_node_certificate_under_another_node_name_is_refused(hosts: Hosts) -> None:
    hosts.join("node1", hosts.token())
    node1 = hosts.nodes["node1"]
    start_execd(hosts, "node1", node1.state_dir / "tls", "node2")
    wait_until(lambda: "its certificate names node node1, its hello 'node2'" in hosts.controller_log(),
               describe="the hello as node2 to be refused")
    assert "refused a node channel from 10.213.0.2:" in hosts.controller_log()
    assert nodes(hosts) == {"node1": "up"}


PLAIN = f"""
import socket
s = socket.create_connection(("10.213.0.1", {PORT}), timeout=10)
s.sendall(b"GET /v1/ping HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
data = b""
try:
    while chunk := s.recv(4096):
        data += chunk
except (ConnectionResetError, TimeoutError):
    pass
print(repr(data[:12]))
"""

OVER_TLS = f"""
import ssl, sys
from drover.client import Client
from drover.cluster.tls import pinned_context
from drover.core.errors import Forbidden
ca = open(sys.argv[1], "rb").read()
api = Client("https://10.213.0.1:{PORT}", timeout_s=10, tls=pinned_context(ca))
print("ping", api.ping().api)
for call in (api.jobs, api.nodes, api.tokens, api.leave):
    try:
        call()
    except Forbidden as error:
        print(call.__name__, "refused:", error)
"""


def test_plain_tcp_is_refused_and_users_are_refused_over_tls(hosts: Hosts) -> None:
    node1 = hosts.nodes["node1"]
    plain = node1.python(PLAIN)
    assert plain.returncode == 0, plain.stderr
    assert not plain.stdout.startswith("b'HTTP/"), plain.stdout  # no HTTP is spoken in the clear

    ca = hosts.ctl.state_dir / "tls" / "ca.crt"
    answered = node1.run(sys.executable, "-c", OVER_TLS, str(ca), check=False)
    assert answered.returncode == 0, answered.stderr
    lines = answered.stdout.splitlines()
    assert lines[0] == "ping v1"
    user = ("a user's request over TCP carries a MUNGE credential of theirs; `drover` sends one from a host "
            "that joined the cluster (`drover join`), where munged runs with the cluster's key")
    assert lines[1:4] == [f"jobs refused: {user}", f"nodes refused: {user}", f"tokens refused: {user}"]
    assert lines[4].startswith("leave refused: only a node of the cluster")
