"""Anyone who can reach the controller's TLS port, before a client certificate or a MUNGE
credential is checked: a header without end, a body announced behind a forged credential,
handshakes never begun, and a node refused for its name that keeps coming back. Every attempt
is made from inside the node's network namespace, against the controller's address on its link."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import psutil
from tests.helpers.flood import HALF_OPEN, HUGE_HEADER, PeakRss, open_descriptors, rss_kib
from tests.helpers.netns import PORT, Hosts
from tests.helpers.wait import wait_until
from tests.integration.cluster.test_join import start_execd

MIB = 1024 * 1024


def controller_pid(hosts: Hosts) -> int:
    assert hosts.controller_process is not None
    process = psutil.Process(hosts.controller_process.pid)  # `ip netns exec` execs the controller itself
    assert "controller" in process.cmdline(), process.cmdline()
    return process.pid


def target(hosts: Hosts) -> str:
    return f"{hosts.ctl.address},{PORT},{hosts.ctl.state_dir / 'tls' / 'ca.crt'}"


def test_a_100_mib_header_over_tls_is_refused_early_and_the_controllers_memory_stays_bounded(hosts: Hosts) -> None:
    node1 = hosts.nodes["node1"]
    pid = controller_pid(hosts)
    for _ in range(3):
        assert node1.python(PING.replace("TARGET", target(hosts))).returncode == 0
    idle = rss_kib(pid)
    with PeakRss(pid) as peak:
        result = node1.run(sys.executable, "-c", HUGE_HEADER, target(hosts), str(100 * MIB), timeout=180)
    sent = json.loads(result.stdout.splitlines()[-1])
    print(f"controller VmRSS: idle {idle} KiB, peak during a 100 MiB header over TLS {peak.peak_kib} KiB; "
          f"sent {sent['sent']}")
    assert sent["reply"].startswith("HTTP/1.1 431 "), sent
    assert sent["state"] == "closed", sent
    assert sent["sent"] < 8 * MIB, sent
    assert peak.peak_kib < 2 * idle, (idle, peak.peak_kib)


PING = """
import socket, ssl
host, port, ca = "TARGET".split(",")
context = ssl.create_default_context(cafile=ca)
context.check_hostname = False
with context.wrap_socket(socket.create_connection((host, int(port)), timeout=10)) as s:
    s.sendall(b"GET /v1/ping HTTP/1.1\\r\\nHost: drover\\r\\nConnection: close\\r\\n\\r\\n")
    reply = b""
    while chunk := s.recv(65536):
        reply += chunk
assert reply.startswith(b"HTTP/1.1 200 "), reply[:200]
"""

ANNOUNCED_BODY = """
import socket, ssl, time
host, port, ca = "TARGET".split(",")
context = ssl.create_default_context(cafile=ca)
context.check_hostname = False
s = context.wrap_socket(socket.create_connection((host, int(port)), timeout=20))
s.sendall(b"POST /v1/jobs HTTP/1.1\\r\\nHost: drover\\r\\nX-Drover-Credential: MUNGE:forged\\r\\n"
          b"Content-Type: application/json\\r\\nContent-Length: 30000000\\r\\n\\r\\n")
started = time.monotonic()
reply = s.recv(65536)
print(round(time.monotonic() - started, 2), reply[:12].decode())
"""


def test_a_forged_credential_is_refused_before_the_body_it_announces_is_read(hosts: Hosts) -> None:
    answered = hosts.nodes["node1"].python(ANNOUNCED_BODY.replace("TARGET", target(hosts)))
    assert answered.returncode == 0, answered.stderr
    seconds, status = answered.stdout.split(maxsplit=1)
    status = status.strip()
    assert status == "HTTP/1.1 403", answered.stdout  # without a byte of the 30 MB sent
    assert float(seconds) < 10


def test_handshakes_never_begun_are_limited_per_address_and_timed_out(hosts: Hosts) -> None:
    (hosts.ctl.state_dir / "drover.toml").write_text("[controller.connections]\nheader_timeout_s = 2.0\n")
    hosts.kill_controller()
    hosts.restart_controller()
    pid = controller_pid(hosts)
    before = open_descriptors(pid)
    node1 = hosts.nodes["node1"]
    holder = subprocess.Popen(node1.command(sys.executable, "-c", HALF_OPEN, target(hosts), "1000"),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        counts = json.loads(holder.stdout.readline())
        assert holder.stdout.readline().strip() == "holding", holder.stderr
        assert counts["opened"] == 1000 and counts["answered_at_once"] >= 1000 - 128, counts
        assert open_descriptors(pid) < before + 128 + 20
        # Another address is served meanwhile (the controller's own host, on the same port).
        assert hosts.ctl.python(PING.replace("TARGET", target(hosts))).returncode == 0
        # The handshakes not begun are dropped after header_timeout_s, the holder still there.
        wait_until(lambda: open_descriptors(pid) < before + 10, timeout=30,
                   describe="the controller to drop the connections that never began a handshake")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    assert "refused a connection on 10.213.0.1:7443 from 10.213.0.2: it has 128 connections open" in \
        hosts.controller_log()


def test_a_node_refused_for_its_name_tries_again_ever_less_often(hosts: Hosts) -> None:
    hosts.join("node1", hosts.token())
    node1 = hosts.nodes["node1"]
    start_execd(hosts, "node1", node1.state_dir / "tls", "node2")
    refusal = "its certificate names node node1, its hello 'node2'"
    wait_until(lambda: refusal in hosts.controller_log(), describe="the hello as node2 to be refused")
    # A rate is asserted, so time must pass: the first refusal, then tries after at least
    # 0.5, 1.5 and 3.5 s, and none until 7.5 s (it was ~70 tries a second).
    time.sleep(6)
    tries = hosts.controller_log().count(refusal)
    assert 2 <= tries <= 5, tries
