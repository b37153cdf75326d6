"""The execd's end of the node channel: connect, say hello, carry out orders, reconnect.

The controller is on the local Unix socket, or on another host at https://ADDR:PORT: then the
channel is TLS only, the controller verified against the cluster's CA and this node known by
its certificate. Several controllers may share one PostgreSQL store, one of them active: the
channel is given all their addresses and keeps to the one that takes it. A standby refuses the
channel with a 503 that names the active controller, which is tried next; a refused or lost
connection moves on to the next address; after a whole round without a controller taking the
node, it waits before the next round (execd/reconnect.py: doubling from 0.05 s, or from 1 s once
a controller refused the node, up to `reconnect_max_s`, with jitter), and starts again from the
shortest wait once a controller welcomed it.

Messages sent while disconnected are dropped: what matters is rebuilt on the next connect (the
hello lists the attempts the spool holds, and every unacknowledged exit is sent again), whichever
controller it reaches.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Callable, Sequence
from typing import Any

from websockets.asyncio.client import ClientConnection, connect, unix_connect
from websockets.exceptions import ConnectionClosed, InvalidMessage, InvalidStatus

from drover.execd.reconnect import Backoff
from drover.protocol.node_channel import (
    Ack,
    Heartbeat,
    Hello,
    SignalAttempt,
    StartAttempt,
    Welcome,
    controller_decoder,
    encoder,
    frames,
)

log = logging.getLogger("drover.execd")
CHANNEL_PATH = "/v1/nodes/channel"
POLICY_VIOLATION = 1008  # the controller's close for a node it refuses (api/node_channel.py)


class ControllerChannel:
    def __init__(self, addresses: Sequence[str], hello: Callable[[], Hello], on_connect: Callable[[], None],
                 tls: ssl.SSLContext | None = None, heartbeat: Callable[[], Heartbeat] | None = None,
                 reconnect_max_s: float = 30.0) -> None:
        """`addresses`: the controller's Unix socket, or https://ADDR:PORT with `tls`; several
        where controllers share one store. `heartbeat`: what the node says every heartbeat_s (the
        controller's Welcome says how often)."""
        self.addresses = list(addresses)
        self._index = 0  # the address tried next
        self.tls = tls
        self.hello = hello
        self.heartbeat = heartbeat
        self.on_connect = on_connect
        self.handlers: dict[type, Callable[[Any], None]] = {}
        self._connection: ClientConnection | None = None
        self._queue: list[Any] = []
        self._wake = asyncio.Event()
        self.connected = asyncio.Event()
        self.backoff = Backoff(reconnect_max_s)
        self.staged_chunks = False  # whether the controller takes staged-out files in chunks (its Welcome)

    def on(self, kind: type, handler: Callable[[Any], None]) -> None:
        self.handlers[kind] = handler

    def send(self, message: Any) -> None:
        if self._connection is not None:
            self._queue.append(message)
            self._wake.set()

    async def reconnect(self) -> None:
        """Close the channel: run_forever opens a new one at once, with a new Hello (a node that
        leaves says so in its `ends_at`, execd/leaving.py)."""
        connection = self._connection
        if connection is not None:
            self._connection = None  # what is sent from now on waits for the next one's on_connect
            self.connected.clear()
            await connection.close()

    async def run_forever(self) -> None:
        missed = 0  # addresses tried in a row without a controller taking the channel
        refused = False  # a controller of this round refused the node
        while True:
            address = self.addresses[self._index]
            welcomed = False
            try:
                async with self._connect(address) as connection:
                    try:
                        await self._serve(connection)
                    finally:
                        welcomed = self.connected.is_set()
            except InvalidStatus as refusal:
                refused = self._refused(address, refusal) or refused
            except ConnectionClosed as closed:
                if closed.rcvd is not None and closed.rcvd.code == POLICY_VIOLATION and not welcomed:
                    log.warning("controller channel: %s refused this node: %s", address,
                                closed.rcvd.reason or "policy violation")
                    refused = True
                else:
                    log.info("controller channel to %s: %s", address, closed)
                if not welcomed:
                    self._index = (self._index + 1) % len(self.addresses)
            except OSError as error:
                log.info("controller channel to %s: %s", address, error or "closed")
                if not welcomed:
                    self._index = (self._index + 1) % len(self.addresses)
            except InvalidMessage as error:
                # A controller that stops closes the connections it accepted, the handshakes
                # still under way too: no answer, not a failure of this node's.
                ended = isinstance(error.__cause__, EOFError)
                log.info("controller channel to %s: %s", address,
                         "closed during the handshake" if ended else f"not a controller's answer ({error})")
                self._index = (self._index + 1) % len(self.addresses)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("controller channel failed")
            finally:
                self._connection = None
                self.connected.clear()
            if welcomed:
                # The controller that had taken the node went away: try it, then the others, at once.
                self.backoff.reset()
                missed, refused = 0, False
                continue
            missed += 1
            if missed >= len(self.addresses):  # a whole round without a controller
                delay = self.backoff.after_failure(refused)
                missed, refused = 0, False
                log.info("controller channel: no controller took it; trying again in %.2fs", delay)
                await asyncio.sleep(delay)

    def _refused(self, address: str, refusal: InvalidStatus) -> bool:
        """A controller refused the channel: a standby names the active one, which is tried
        next (it is verified against the cluster's CA as any other); else the next address.
        Whether it refused the node itself (a 4xx), rather than being busy or a standby."""
        active = _active_named(refusal)
        status = refusal.response.status_code
        log.info("controller channel: %s refused it (HTTP %d)%s", address, status,
                 f"; the active controller is {active}" if active else "")
        if active and active != address and (active in self.addresses or active.startswith("https://")):
            if active not in self.addresses:
                self.addresses.append(active)
            self._index = self.addresses.index(active)
        else:
            self._index = (self._index + 1) % len(self.addresses)
        return 400 <= status < 500

    def _connect(self, address: str) -> connect:
        if address.startswith("https://"):
            host = address.removeprefix("https://").rstrip("/")
            return connect(f"wss://{host}{CHANNEL_PATH}", ssl=self.tls, max_size=2**26, ping_interval=20,
                           open_timeout=20)
        return unix_connect(address, uri=f"ws://drover{CHANNEL_PATH}", max_size=2**26, ping_interval=20)

    async def _serve(self, connection: ClientConnection) -> None:
        # Taken before the hello is made: what is sent while the hello goes (a job that starts
        # meanwhile, whose attempt the hello says is not started yet) waits in the queue, and
        # goes after it, when the writer starts; nothing is dropped between the two.
        self._queue.clear()
        self._connection = connection
        await connection.send(encoder.encode([self.hello()]))
        self.on_connect()
        writer = asyncio.get_running_loop().create_task(self._write_forever(connection))
        beats: asyncio.Task[None] | None = None
        try:
            async for frame in connection:
                data = frame.encode() if isinstance(frame, str) else frame
                for message in controller_decoder.decode(data):
                    if isinstance(message, Welcome):
                        self.staged_chunks = message.staged_chunks
                        self.connected.set()
                        log.info("joined the cluster as node %s", message.node)
                        if self.heartbeat is not None and beats is None:
                            beats = asyncio.get_running_loop().create_task(self._beat(message.heartbeat_s))
                    handler = self.handlers.get(type(message))
                    if handler is not None:
                        handler(message)
        finally:
            writer.cancel()
            if beats is not None:
                beats.cancel()

    async def _beat(self, every_s: float) -> None:
        """A heartbeat now and every `every_s`: a node that falls silent (a cut link sends no
        FIN) is seen as DOWN by the controller after three."""
        assert self.heartbeat is not None
        while True:
            self.send(self.heartbeat())
            await asyncio.sleep(max(every_s, 0.05))

    async def _write_forever(self, connection: ClientConnection) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._queue = self._queue, []
            for frame in frames(batch):  # none past the controller's frame limit, however much is queued
                await connection.send(frame)


def _active_named(refusal: InvalidStatus) -> str | None:
    """The active controller a standby's refusal names (api/standby.py), if it names one."""
    try:
        reply = json.loads(refusal.response.body or b"")
    except ValueError:
        return None
    active = reply.get("active") if isinstance(reply, dict) and reply.get("kind") == "standby" else None
    return active if isinstance(active, str) else None


__all__ = ["ControllerChannel", "Ack", "SignalAttempt", "StartAttempt"]
