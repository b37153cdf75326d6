"""The client's HTTP transport against a scripted server on a Unix socket: a request that may
have been carried out is never sent again by itself, and a connection whose answer is still
due is never reused."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

import pytest

from drover.client.transport import ConnectionLost, Transport
from drover.core.errors import Unavailable

OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"


def answer(body: bytes) -> bytes:
    return OK % (len(body), body)


class Server:
    """Accepts connections; `script(connection, request)` answers each request it reads."""

    def __init__(self, path: Path, script: Callable[[socket.socket, bytes], None]) -> None:
        self.path, self.script = str(path), script
        self.requests: list[bytes] = []
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(connection,), daemon=True).start()

    def _connection(self, connection: socket.socket) -> None:
        with connection:
            try:
                while True:
                    data = connection.recv(65536)
                    if not data:
                        return
                    self.requests.append(data)
                    self.script(connection, data)
            except OSError:
                return  # the client went away: as a server sees it

    def close(self) -> None:
        self.listener.close()


Serve = Callable[[Callable[[socket.socket, bytes], None]], Server]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    servers: list[Server] = []

    def start(script: Callable[[socket.socket, bytes], None]) -> Server:
        servers.append(Server(tmp_path / f"api{len(servers)}.sock", script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def test_a_post_whose_connection_is_lost_is_not_sent_again(serve: Serve) -> None:
    def hang_up(connection: socket.socket, request: bytes) -> None:
        connection.shutdown(socket.SHUT_RDWR)

    server = serve(hang_up)
    transport = Transport(server.path, timeout_s=5)
    with pytest.raises(ConnectionLost, match="closed the connection before it answered"):
        transport.call("POST", "/v1/jobs/actions/signal", {"refs": ["1"], "signal": "USR1"})
    assert len(server.requests) == 1


def test_an_idle_connection_the_server_closed_is_replaced_before_sending(serve: Serve) -> None:
    closed = threading.Event()

    def once_then_close(connection: socket.socket, request: bytes) -> None:
        connection.sendall(answer(b'{"n": 1}'))
        connection.shutdown(socket.SHUT_RDWR)  # as an idle keep-alive timeout would
        closed.set()

    server = serve(once_then_close)
    transport = Transport(server.path, timeout_s=5)
    assert transport.call("POST", "/x", {}) == {"n": 1}
    assert closed.wait(5)
    assert transport.call("POST", "/x", {}) == {"n": 1}  # on a new connection, sent once
    assert len(server.requests) == 2


class Interrupted(Exception):
    pass


def test_an_interrupted_long_poll_never_leaves_its_answer_for_the_next_request(serve: Serve) -> None:
    release = threading.Event()

    def slow_first(connection: socket.socket, request: bytes) -> None:
        if b"/wait" in request:
            release.wait(5)  # the long poll's answer comes after the caller gave up on it
            connection.sendall(answer(b'{"ended": false}'))
        else:
            connection.sendall(answer(b'{"job": "shown"}'))

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise Interrupted

    server = serve(slow_first)
    transport = Transport(server.path, timeout_s=10)
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(Interrupted):
            transport.call("GET", "/v1/jobs/1/wait?timeout=30")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    release.set()
    assert transport.call("GET", "/v1/jobs/1") == {"job": "shown"}


def test_a_controller_on_another_host_is_not_for_users() -> None:
    from drover.core.errors import BadRequest

    with pytest.raises(BadRequest, match="serves nodes and joining hosts only"):
        Transport("https://10.213.0.1:7443").call("GET", "/v1/jobs")


STANDBY = (b'{"error":"the controller at B is a standby; the active controller is at A","kind":"standby",'
           b'"active":"%s"}')


def refusal(body: bytes) -> bytes:
    return b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


def test_several_controllers_a_standby_sends_the_request_to_the_active_one(tmp_path: Path) -> None:
    """The first address is gone, the second a standby that names the third: the POST is sent
    there, once; a client given the standby alone gets its error, naming the active one."""
    active_path, standby_path = tmp_path / "active.sock", tmp_path / "standby.sock"
    active = Server(active_path, lambda connection, _: connection.sendall(answer(b'{"ids":[7]}')))
    standby = Server(standby_path, lambda connection, _: connection.sendall(refusal(STANDBY % str(active_path).encode())))
    try:
        transport = Transport(f"{tmp_path / 'gone.sock'},{standby_path},{active_path}", timeout_s=5)
        assert transport.call("POST", "/v1/jobs", {"jobs": []}) == {"ids": [7]}
        assert transport.address == str(active_path) and len(active.requests) == 1
        transport.close()

        from drover.core.errors import Standby

        with pytest.raises(Standby, match="is a standby; the active controller is at") as refused:
            Transport(str(standby_path), timeout_s=5).call("GET", "/v1/jobs")
        assert refused.value.active == str(active_path)
    finally:
        active.close()
        standby.close()


def test_several_controllers_a_keyed_submission_whose_connection_is_lost_goes_to_the_next(tmp_path: Path) -> None:
    """The controller in use hangs up on the submission (it died before answering): a request
    that may be sent again (a submission with its request key) goes on to the next controller,
    which answers; any other is not sent again."""
    def hang_up(connection: socket.socket, request: bytes) -> None:
        connection.shutdown(socket.SHUT_RDWR)

    dying = Server(tmp_path / "dying.sock", hang_up)
    active = Server(tmp_path / "active.sock", lambda connection, _: connection.sendall(answer(b'{"ids":[7]}')))
    addresses = f"{dying.path},{active.path}"
    try:
        body = {"jobs": [], "request_key": "k-0123456789"}
        assert Transport(addresses, timeout_s=5).call("POST", "/v1/jobs", body, repeatable=True) == {"ids": [7]}
        assert len(dying.requests) == len(active.requests) == 1
        with pytest.raises(ConnectionLost, match="closed the connection before it answered"):
            Transport(addresses, timeout_s=5).call("POST", "/v1/jobs/actions/signal", {"refs": ["1"]})
        assert len(dying.requests) == 2 and len(active.requests) == 1
    finally:
        dying.close()
        active.close()


def test_several_controllers_none_answering_is_one_error_naming_each(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from drover.client import addresses
    from drover.core.errors import Unavailable

    monkeypatch.setattr(addresses, "FAIL_OVER_S", 0.3)
    monkeypatch.setattr("drover.client.transport.FAIL_OVER_S", 0.3)
    with pytest.raises(Unavailable, match=r"no controller of the Drover cluster answers: .*a\.sock.*b\.sock"):
        Transport(f"{tmp_path / 'a.sock'},{tmp_path / 'b.sock'}", timeout_s=5).call("GET", "/v1/ping")


def test_a_connection_the_controller_refused_at_once_says_why(tmp_path: Path) -> None:
    """The controller answers 503 and closes as soon as it accepts a connection it does not
    take (api/listener.py), without reading the request: the client reads that answer, even
    when sending its request fails (a request larger than the socket's buffers always does)."""
    path = str(tmp_path / "api.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen()
    body = b'{"error": "the controller refused this connection: it has 128 connections open already", "kind": "unavailable"}'

    def refuse() -> None:
        for _ in range(2):
            connection, _ = listener.accept()
            connection.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                               % (len(body), body))
            connection.close()

    refusing = threading.Thread(target=refuse)
    refusing.start()
    transport = Transport(path, timeout_s=5)
    try:
        with pytest.raises(Unavailable, match="it has 128 connections open already"):
            transport.call("POST", "/v1/jobs", "x" * 4_000_000)
        with pytest.raises(Unavailable, match="refused this connection"):
            transport.call("GET", "/v1/jobs")
    finally:
        transport.close()
        listener.close()
        refusing.join()
