"""The controller's listening sockets, accepted by the controller itself rather than by uvicorn:
each connection is admitted or refused (api/admission.py) the moment it is accepted, before its
TLS handshake and before a byte of it is read, and only an admitted one gets a protocol
(api/connections.py).

A refused connection on the local socket is told why in one 503 reply; one on TCP is closed at
once (its peer has not even said hello in TLS). Refusals are logged at most once a second, with
how many came since, so that a flood of them does not fill the log. When the process runs out
of descriptors all the same, accepting pauses for a moment rather than spinning.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn

from drover.api.admission import Admission, Peer, Slot, local_peer, tcp_peer
from drover.api.connections import GuardedHttp, GuardedWebSocket, refusal_reply
from drover.config_schema import ConnectionsSection

log = logging.getLogger("drover.controller")
BATCH = 256  # connections accepted per wake-up, so that the loop serves the others in between
OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)
PAUSE_S = 0.1


class RefusalLog:
    """One line a second at most, saying how many were refused since the last."""

    def __init__(self, every_s: float = 1.0) -> None:
        self.every_s = every_s
        self.last = float("-inf")
        self.unsaid = 0

    def refused(self, where: str, peer: str, why: str) -> None:
        now = time.monotonic()
        if now - self.last < self.every_s:
            self.unsaid += 1
            return
        more = f" ({self.unsaid} more refused since the last said)" if self.unsaid else ""
        log.warning("refused a connection on %s from %s: %s%s", where, peer, why, more)
        self.last, self.unsaid = now, 0


class Listener:
    def __init__(self, sock: socket.socket, admission: Admission, make_protocol: Callable[[Slot], asyncio.Protocol],
                 tls: ssl.SSLContext | None, handshake_timeout_s: float, own_uid: int, refusals: RefusalLog) -> None:
        self.sock = sock
        self.admission = admission
        self.make_protocol = make_protocol
        self.tls = tls
        self.handshake_timeout_s = handshake_timeout_s
        self.own_uid = own_uid
        self.refusals = refusals
        self.local = sock.family == socket.AF_UNIX
        self.where = "the local socket" if self.local else f"{sock.getsockname()[0]}:{sock.getsockname()[1]}"
        self.opening: set[asyncio.Task[None]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.sock.setblocking(False)
        self.loop.add_reader(self.sock.fileno(), self._accept)

    def stop(self) -> None:
        if self.loop is not None:
            self.loop.remove_reader(self.sock.fileno())
            self.loop = None
        for task in self.opening:
            task.cancel()

    def _accept(self) -> None:
        for _ in range(BATCH):
            try:
                conn, address = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:
                if error.errno in OUT_OF_DESCRIPTORS:
                    self._pause(error)
                    return
                continue  # the peer went before it was accepted (ECONNABORTED, EPROTO)
            conn.setblocking(False)
            self._admit(conn, address)

    def _admit(self, conn: socket.socket, address: Any) -> None:
        try:
            peer = self._peer(conn, address)
        except OSError:
            conn.close()
            return
        slot = self.admission.admit(peer)
        if isinstance(slot, str):
            self.refusals.refused(self.where, peer.key, slot)
            if self.local:
                with contextlib.suppress(OSError):
                    conn.send(refusal_reply(503, f"the controller refused this connection: {slot}"))
            conn.close()
            return
        assert self.loop is not None
        task = self.loop.create_task(self._open(conn, slot))
        self.opening.add(task)
        task.add_done_callback(self.opening.discard)

    def _peer(self, conn: socket.socket, address: Any) -> Peer:
        if self.local:
            credentials = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
            return local_peer(int.from_bytes(credentials[4:8], "little", signed=True), self.own_uid)
        return tcp_peer(str(address[0]))

    async def _open(self, conn: socket.socket, slot: Slot) -> None:
        assert self.loop is not None
        if not self.local:
            with contextlib.suppress(OSError):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            if self.tls is None:
                await self.loop.connect_accepted_socket(lambda: self.make_protocol(slot), conn)
            else:
                # A peer that neither finishes its handshake nor answers the closing one holds
                # its descriptor no longer than a slow header would.
                await self.loop.connect_accepted_socket(lambda: self.make_protocol(slot), conn, ssl=self.tls,
                                                        ssl_handshake_timeout=self.handshake_timeout_s,
                                                        ssl_shutdown_timeout=self.handshake_timeout_s)
        except (OSError, ssl.SSLError):  # TimeoutError is an OSError
            # A handshake that failed or took too long: its transport closed the socket; the
            # protocol was never made, so the slot is given back here.
            slot.release()
            conn.close()
        except asyncio.CancelledError:
            slot.release()
            conn.close()
            raise

    def _pause(self, error: OSError) -> None:
        """Out of descriptors: stop accepting for a moment, rather than wake up at once again
        for the same connection waiting in the backlog."""
        self.refusals.refused(self.where, "a peer", f"cannot accept it: {error.strerror}")
        assert self.loop is not None
        loop = self.loop
        loop.remove_reader(self.sock.fileno())

        def again() -> None:
            if self.loop is loop:
                loop.add_reader(self.sock.fileno(), self._accept)

        loop.call_later(PAUSE_S, again)


def server(config: uvicorn.Config, listening: list[socket.socket], tls: ssl.SSLContext | None,
           admission: Admission, limits: ConnectionsSection, refusals: RefusalLog, own_uid: int) -> uvicorn.Server:
    """A uvicorn server whose connections come from these listeners, not from its own: it runs
    the app, keeps the connections' state and stops them; the listeners admit them. Without
    uvicorn's own signal handling either: uvicorn re-raises SIGTERM once it has shut down, which
    would kill the controller before it removes its socket and closes the store; the controller
    installs its handlers on the event loop instead."""
    config.ws = GuardedWebSocket
    config.timeout_keep_alive = limits.idle_timeout_s  # type: ignore[assignment]  # uvicorn hands it to call_later

    class Server(uvicorn.Server):
        listeners: list[Listener] = []

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await self.lifespan.startup()

            def make_protocol(slot: Slot) -> asyncio.Protocol:
                return GuardedHttp(config=self.config, server_state=self.server_state, app_state=self.lifespan.state,
                                   slot=slot, limits=limits)

            self.servers = []  # no asyncio servers: shutdown has none to close
            self.listeners = [Listener(sock, admission, make_protocol, tls, limits.header_timeout_s, own_uid, refusals)
                              for sock in listening]
            for listener in self.listeners:
                listener.start()
            self.started = True

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            for listener in self.listeners:
                listener.stop()
            await super().shutdown(sockets=None)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Server(config)
