"""An action the dashboard refuses before reading its body closes its connection: the body,
left unread, must never be taken for the next request on that connection."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from drover.web.server import Dashboard, _Handler, _Server


@pytest.fixture
def served() -> Iterator[tuple[int, Dashboard]]:
    server = _Server(("127.0.0.1", 0), _Handler)
    port = int(server.server_address[1])

    def no_controller() -> object:
        raise AssertionError("a refused request reached the controller")

    server.dashboard = Dashboard("127.0.0.1", port, no_controller, "someone")  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield port, server.dashboard
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def exchange(port: int, request: bytes) -> bytes:
    """Send `request` on one connection and read until the server closes it (or 5 s pass)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(request)
        reply = b""
        try:
            while chunk := connection.recv(65536):
                reply += chunk
        except TimeoutError:
            reply += b"<still open>"
    return reply


def session_cookie(port: int, dashboard: Dashboard) -> str:
    reply = exchange(port, f"GET /?token={dashboard.sessions.token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                           "Connection: close\r\n\r\n".encode())
    line = next(line for line in reply.decode().split("\r\n") if line.startswith("Set-Cookie: "))
    return line.removeprefix("Set-Cookie: ").split(";")[0]


@pytest.mark.parametrize("refusal", ["no session", "no csrf token", "another origin", "unknown action", "too big"])
def test_a_refused_action_closes_its_connection_and_its_body_is_never_a_request(
        served: tuple[int, Dashboard], refusal: str) -> None:
    port, dashboard = served
    cookie = session_cookie(port, dashboard)
    session = dashboard.sessions.find(cookie)
    assert session is not None
    # A body that is itself a request: were it read as the next one, a second answer would come.
    smuggled = f"GET /jobs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\n\r\n".encode()
    headers = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json", "Cookie": cookie,
               "X-CSRF-Token": session.csrf, "Content-Length": str(len(smuggled))}
    path = "/actions/cancel"
    if refusal == "no session":
        del headers["Cookie"]
    elif refusal == "no csrf token":
        del headers["X-CSRF-Token"]
    elif refusal == "another origin":
        headers["Origin"] = "http://example.org"
    elif refusal == "unknown action":
        path = "/actions/signal"
    else:
        headers["Content-Length"] = str(1024 * 1024)
    head = f"POST {path} HTTP/1.1\r\n" + "".join(f"{key}: {value}\r\n" for key, value in headers.items()) + "\r\n"
    reply = exchange(port, head.encode() + smuggled)
    assert reply.count(b"HTTP/1.1 ") == 1, reply
    assert reply.split(b" ", 2)[1] in (b"400", b"403", b"404"), reply
    assert b"Connection: close" in reply and not reply.endswith(b"<still open>"), reply
