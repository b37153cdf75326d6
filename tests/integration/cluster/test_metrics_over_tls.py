"""GET /metrics on the controller's TLS port, from another host: served there as on the Unix
socket, to a user the controller knows; a peer without a MUNGE credential (Prometheus, say) is
refused, which is why `[controller] metrics_listen` exists (docs/metrics.md)."""

from __future__ import annotations

from tests.helpers.netns import PORT, Hosts

GET = """
import socket, ssl
host, port, ca = "TARGET".split(",")
context = ssl.create_default_context(cafile=ca)
context.check_hostname = False
with context.wrap_socket(socket.create_connection((host, int(port)), timeout=10)) as s:
    s.sendall(b"GET /metrics HTTP/1.1\\r\\nHost: drover\\r\\nAccept: application/openmetrics-text\\r\\n"
              b"Connection: close\\r\\n\\r\\n")
    reply = b""
    while chunk := s.recv(65536):
        reply += chunk
print(reply.decode(errors="replace"))
"""


def test_metrics_on_the_tls_port_need_a_user(hosts: Hosts) -> None:
    target = f"{hosts.ctl.address},{PORT},{hosts.ctl.state_dir / 'tls' / 'ca.crt'}"
    answered = hosts.nodes["node1"].python(GET.replace("TARGET", target))
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.startswith("HTTP/1.1 403 "), answered.stdout[:300]
    assert "MUNGE credential" in answered.stdout, answered.stdout[:600]
