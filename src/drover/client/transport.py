"""A small HTTP/1.1 client over a Unix socket (or TCP), standard library only.

The `drover` command starts in a few tens of milliseconds because this imports only `json` and
the C half of `socket` (`_socket`: the module `socket` adds enums and selectors, 2 ms of every
`drover submit` here, and is imported only for a controller on another host); http.client alone
would cost more than the rest of `drover submit` on a small machine.
It speaks the subset of HTTP the controller uses: one request at a time on a kept-alive
connection, bodies with Content-Length or chunked encoding. Given several controllers' addresses
it goes to the active one and follows it when it changes (client/addresses.py).
"""

from __future__ import annotations

import _socket
import json
import time

from drover.client.addresses import (
    FAIL_OVER_S,
    FIRST_WAIT_S,
    LONGEST_WAIT_S,
    Addresses,
    standby_answer,
)
from drover.core.errors import (
    ERROR_KINDS,
    BadRequest,
    DroverError,
    Standby,
    Unavailable,
    Unreachable,
)

TYPE_CHECKING = False  # typing costs milliseconds at start-up; type checkers read this as True
if TYPE_CHECKING:
    import ssl
    from collections.abc import Callable, Sequence
    from typing import Any

CREDENTIAL_HEADER = "X-Drover-Credential"  # the same name as cluster/munge.py's, which this must not import


class ConnectionLost(Unavailable):
    """The connection closed before the answer came: the request may or may not have been
    carried out. Only a request that is safe to repeat (a GET, or a submission carrying its
    request key) may be sent again."""


class Transport:
    def __init__(self, address: str | Sequence[str], timeout_s: float | None = 60.0,
                 tls: ssl.SSLContext | None = None, sign: Callable[[str, str, bytes], str] | None = None) -> None:
        """`address`: a Unix socket path, or https://HOST:PORT with `tls` (a controller on
        another host, which serves TCP with TLS only); or several, as a list or separated by
        commas (controllers sharing one store: the active one is used). `sign(method, target,
        body)`: the user's credential for one request, sent with it (a user on another host
        than the controller's)."""
        self.addresses = Addresses(address, may_reach=tls is not None)
        self.timeout_s = timeout_s
        self.tls = tls
        self.sign = sign
        self._sock: _socket.socket | None = None
        self._buffer = b""

    @property
    def address(self) -> str:
        """The controller in use."""
        return self.addresses.current

    def _connect(self) -> _socket.socket:
        """A connection to the address in use, or else to the next that answers, in order."""
        failures: list[DroverError] = []
        for index in self.addresses.order():
            try:
                sock = self._connect_to(self.addresses.all[index])
            except (Unavailable, BadRequest) as error:
                failures.append(error)
                continue
            self.addresses.use(index)
            self._buffer = b""
            return sock
        if len(failures) == 1:
            raise failures[0]
        silent = all(isinstance(failure, Unreachable) for failure in failures)
        raise (Unreachable if silent else Unavailable)(
            "no controller of the Drover cluster answers: " + "; ".join(map(str, failures)))

    def _connect_to(self, address: str) -> _socket.socket:
        try:
            if address.startswith("https://"):
                if self.tls is None:  # DROVER_SOCKET=https://...: users have no certificate to go with it
                    raise BadRequest(f"{address} is a controller on another host, which serves nodes and "
                                     "joining hosts only; users talk to their cluster through its local socket")
                host, _, port = address[8:].rstrip("/").rpartition(":")
                host = host.removeprefix("[").removesuffix("]")
                import socket

                tcp = socket.create_connection((host, int(port)), timeout=self.timeout_s)
                tcp.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return self.tls.wrap_socket(tcp, server_hostname=host)
            local = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            try:
                local.settimeout(self.timeout_s)
                local.connect(address)
            except BaseException:
                local.close()
                raise
            return local
        except (FileNotFoundError, ConnectionRefusedError):
            raise Unreachable(f"no Drover cluster answers at {address}; start one with `drover up`") from None
        except OSError as error:  # ssl.SSLError included: a certificate that does not verify says why
            raise Unavailable(f"cannot reach the Drover cluster at {address}: "
                              f"{getattr(error, 'reason', None) and str(error) or error.strerror or error}") from None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def request(self, method: str, path: str, body: bytes | None = None,
                timeout_s: float | None = None, repeatable: bool = False) -> tuple[int, bytes]:
        """One request and its answer, from the active controller. With several addresses, a
        standby's answer, or no controller answering, sends the request on to the active one or
        the next (a standby did nothing with it), for at most FAIL_OVER_S; a GET whose
        connection was lost goes on too, and so does a `repeatable` request (a submission with
        its request key): the controller that lost it may have died, and the next to be active
        answers it. Anything else whose connection was lost is never sent again here (see
        ConnectionLost)."""
        deadline = time.monotonic() + FAIL_OVER_S
        wait = 0.0
        while True:
            try:
                status, data = self._request_once(method, path, body, timeout_s)
            except ConnectionLost:
                if (method != "GET" and not repeatable) or not self.addresses.several or time.monotonic() > deadline:
                    raise
                self.addresses.follow(None)
            except Unavailable:  # no address answered
                if not self.addresses.several or time.monotonic() > deadline:
                    raise
            else:
                standby, active = standby_answer(status, data)
                if not standby or time.monotonic() > deadline:
                    return status, data
                self.close()
                if not self.addresses.follow(active):
                    return status, data  # a standby, and nowhere else to go: its answer says where
            time.sleep(wait)  # the first move is at once: the active controller is usually there
            wait = min(max(wait * 2, FIRST_WAIT_S), LONGEST_WAIT_S)

    def _request_once(self, method: str, path: str, body: bytes | None,
                      timeout_s: float | None) -> tuple[int, bytes]:
        """One request to the controller in use. A GET is sent again once if a kept-alive
        connection turns out closed."""
        for tries_left in (1, 0) if method == "GET" else (0,):
            if self._sock is not None and _closed_by_peer(self._sock):
                self.close()  # the controller let the idle connection go: a new one, before sending
            fresh = self._sock is None
            if self._sock is None:
                self._sock = self._connect()
            sock = self._sock
            sock.settimeout(timeout_s if timeout_s is not None else self.timeout_s)
            head = f"{method} {path} HTTP/1.1\r\nHost: drover\r\n"
            if self.sign is not None:  # made anew for each send: a credential is good for one use
                head += f"{CREDENTIAL_HEADER}: {self.sign(method, path, body or b'')}\r\n"
            if body is not None:
                head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            try:
                try:
                    sock.sendall(head.encode() + b"\r\n" + (body or b""))
                except ConnectionError:
                    # The controller may have answered and closed before reading all of it: a
                    # body over its max_request_bytes, or a connection it did not take (too many
                    # of this user's open): its answer says why. Without one, the connection is lost.
                    pass
                return self._read_response()
            except (ConnectionError, EOFError):
                self.close()
                if fresh or not tries_left:
                    raise ConnectionLost(f"the Drover cluster at {self.address} closed the connection "
                                         "before it answered") from None
            except TimeoutError:
                self.close()
                raise ConnectionLost(f"the Drover cluster at {self.address} did not answer in time") from None
            except BaseException:
                # Interrupted (Ctrl-C during a long poll): the answer may still come on this
                # connection, and would be taken for the next request's; never reuse it.
                self.close()
                raise
        raise AssertionError("unreachable")

    def _read_until(self, marker: bytes) -> bytes:
        while marker not in self._buffer:
            self._fill()
        data, _, self._buffer = self._buffer.partition(marker)
        return data

    def _read_exactly(self, size: int) -> bytes:
        if len(self._buffer) < size:
            # Gathered in a bytearray: adding each read to bytes copies all before it, which
            # made a 40 MiB body (a staged-out file) take a minute.
            gathered = bytearray(self._buffer)
            assert self._sock is not None
            while len(gathered) < size:
                chunk = self._sock.recv(max(65536, min(size - len(gathered), 1 << 22)))
                if not chunk:
                    raise EOFError
                gathered += chunk
            self._buffer = bytes(gathered)
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def _fill(self) -> None:
        assert self._sock is not None
        chunk = self._sock.recv(65536)
        if not chunk:
            raise EOFError
        self._buffer += chunk

    def _read_response(self) -> tuple[int, bytes]:
        head = self._read_until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        status = int(head[0].split(" ", 2)[1])
        headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self._read_until(b"\r\n").split(b";")[0], 16)
                if size == 0:
                    self._read_until(b"\r\n")
                    break
                parts.append(self._read_exactly(size))
                self._read_exactly(2)
            body = b"".join(parts)
        else:
            body = self._read_exactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, body

    def call(self, method: str, path: str, payload: Any = None, timeout_s: float | None = None,
             repeatable: bool = False) -> Any:
        """Send JSON, return the decoded JSON reply; an error reply raises the matching DroverError.
        `repeatable`: the request may be sent again after a lost connection (see `request`)."""
        body = None if payload is None else json.dumps(payload, separators=(",", ":")).encode()
        status, data = self.request(method, path, body, timeout_s, repeatable)
        if status >= 400:
            try:
                reply = json.loads(data)
                if reply.get("kind") == "standby":
                    raise Standby(reply["error"], reply.get("active"))
                error_class = ERROR_KINDS.get(reply.get("kind", ""), DroverError)
                raise error_class(reply["error"])
            except (ValueError, KeyError, AttributeError):
                raise DroverError(f"the controller answered {status}: {data[:200]!r}") from None
        return json.loads(data) if data else None


def _closed_by_peer(sock: _socket.socket) -> bool:
    """Whether the other end closed an idle kept-alive connection (reading would give EOF)."""
    if hasattr(sock, "cipher"):
        return False  # TLS cannot peek; a closed connection shows when the request is answered
    timeout = sock.gettimeout()
    sock.setblocking(False)  # with a timeout, Python would wait for data before it reads
    try:
        return sock.recv(1, _socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False  # open, with nothing to read: as it should be between requests
    except OSError:
        return True
    finally:
        sock.settimeout(timeout)
