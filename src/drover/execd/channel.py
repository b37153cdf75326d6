"""The execd's end of the node channel: connect, say hello, carry out orders, reconnect.

The controller is on the local Unix socket, or on another host at https://ADDR:PORT: then the
channel is TLS only, the controller verified against the cluster's CA and this node known by
its certificate. Several controllers may share one PostgreSQL store, one of them active: the
channel is given all their addresses and keeps to the one that takes it. A standby refuses the
channel with a 503 that names the active controller, which is tried next; a refused or lost
connection moves on to the next address; after a whole round without a controller, it waits
(0.05 s, doubling up to 2 s) before the next round.

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
from websockets.exceptions import ConnectionClosed, InvalidStatus

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


class ControllerChannel:
    def __init__(self, addresses: Sequence[str], hello: Callable[[], Hello], on_connect: Callable[[], None],
                 tls: ssl.SSLContext | None = None, heartbeat: Callable[[], Heartbeat] | None = None) -> None:
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
        self.staged_chunks = False  # whether the controller takes staged-out files in chunks (its Welcome)

    def on(self, kind: type, handler: Callable[[Any], None]) -> None:
        self.handlers[kind] = handler

    def send(self, message: Any) -> None:
        if self._connection is not None:
            self._queue.append(message)
            self._wake.set()

    async def run_forever(self) -> None:
        delay = 0.05
        missed = 0  # addresses tried in a row without a controller taking the channel
        while True:
            address = self.addresses[self._index]
            served = False
            try:
                async with self._connect(address) as connection:
                    delay, missed, served = 0.05, 0, True
                    await self._serve(connection)
            except InvalidStatus as refusal:
                self._refused(address, refusal)
            except (OSError, ConnectionClosed) as error:
                log.info("controller channel to %s: %s", address, error or "closed")
                if not served:
                    self._index = (self._index + 1) % len(self.addresses)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("controller channel failed")
            finally:
                self._connection = None
                self.connected.clear()
            if served:
                continue  # the controller it had went away: try it, then the others, at once
            missed += 1
            if missed >= len(self.addresses):  # a whole round without a controller
                missed = 0
                log.info("controller channel: no controller took it; trying again in %.1fs", delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _refused(self, address: str, refusal: InvalidStatus) -> None:
        """A controller refused the channel: a standby names the active one, which is tried
        next (it is verified against the cluster's CA as any other); else the next address."""
        active = _active_named(refusal)
        log.info("controller channel: %s refused it (HTTP %d)%s", address, refusal.response.status_code,
                 f"; the active controller is {active}" if active else "")
        if active and active != address and (active in self.addresses or active.startswith("https://")):
            if active not in self.addresses:
                self.addresses.append(active)
            self._index = self.addresses.index(active)
        else:
            self._index = (self._index + 1) % len(self.addresses)

    def _connect(self, address: str) -> connect:
        if address.startswith("https://"):
            host = address.removeprefix("https://").rstrip("/")
            return connect(f"wss://{host}{CHANNEL_PATH}", ssl=self.tls, max_size=2**26, ping_interval=20,
                           open_timeout=20)
        return unix_connect(address, uri=f"ws://drover{CHANNEL_PATH}", max_size=2**26, ping_interval=20)

    async def _serve(self, connection: ClientConnection) -> None:
        await connection.send(encoder.encode([self.hello()]))
        self._connection = connection
        self._queue.clear()
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
