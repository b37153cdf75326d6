"""The execd's end of the node channel: connect, say hello, carry out orders, reconnect.

The controller is on the local Unix socket, or on another host at https://ADDR:PORT: then the
channel is TLS only, the controller verified against the cluster's CA and this node known by
its certificate.

Messages sent while disconnected are dropped: what matters is rebuilt on the next connect (the
hello lists the attempts the spool holds, and every unacknowledged exit is sent again).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
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
)

log = logging.getLogger("drover.execd")
CHANNEL_PATH = "/v1/nodes/channel"


class ControllerChannel:
    def __init__(self, socket_path: str, hello: Callable[[], Hello], on_connect: Callable[[], None],
                 tls: ssl.SSLContext | None = None, heartbeat: Callable[[], Heartbeat] | None = None) -> None:
        """`socket_path`: the controller's Unix socket, or https://ADDR:PORT with `tls`.
        `heartbeat`: what the node says every heartbeat_s (the controller's Welcome says how often)."""
        self.socket_path = socket_path
        self.tls = tls
        self.hello = hello
        self.heartbeat = heartbeat
        self.on_connect = on_connect
        self.handlers: dict[type, Callable[[Any], None]] = {}
        self._connection: ClientConnection | None = None
        self._queue: list[Any] = []
        self._wake = asyncio.Event()
        self.connected = asyncio.Event()

    def on(self, kind: type, handler: Callable[[Any], None]) -> None:
        self.handlers[kind] = handler

    def send(self, message: Any) -> None:
        if self._connection is not None:
            self._queue.append(message)
            self._wake.set()

    async def run_forever(self) -> None:
        delay = 0.05
        while True:
            try:
                async with self._connect() as connection:
                    delay = 0.05
                    await self._serve(connection)
            except (OSError, ConnectionClosed, InvalidStatus) as error:
                log.info("controller channel: %s; reconnecting in %.1fs", error or "closed", delay)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("controller channel failed")
            finally:
                self._connection = None
                self.connected.clear()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _connect(self) -> connect:
        if self.socket_path.startswith("https://"):
            address = self.socket_path.removeprefix("https://").rstrip("/")
            return connect(f"wss://{address}{CHANNEL_PATH}", ssl=self.tls, max_size=2**26, ping_interval=20,
                           open_timeout=20)
        return unix_connect(self.socket_path, uri=f"ws://drover{CHANNEL_PATH}", max_size=2**26, ping_interval=20)

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
            if batch:
                await connection.send(encoder.encode(batch))


__all__ = ["ControllerChannel", "Ack", "SignalAttempt", "StartAttempt"]
