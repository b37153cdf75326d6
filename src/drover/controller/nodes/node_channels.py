"""One long-lived channel per connected execd. Messages queued in one loop turn leave as one
frame (several, past a few MiB), so a burst of orders (a planner cycle's starts) costs one
write per node."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

from drover.protocol.node_channel import frames

log = logging.getLogger("drover.controller")


class FrameSocket(Protocol):
    async def send_bytes(self, data: bytes) -> None: ...

    async def close(self, code: int = 1000) -> None: ...


class NodeChannel:
    def __init__(self, node: str, socket: FrameSocket, local: bool = False, host: str | None = None) -> None:
        self.node = node
        self.socket = socket
        self.local = local  # on the controller's Unix socket: the node shares the controller's host
        self.host = host  # over TLS, the peer's IP address (the host a job came from, for its event log)
        self._queue: list[Any] = []
        self._wake = asyncio.Event()
        self._writer = asyncio.get_running_loop().create_task(self._write_forever())

    def send(self, message: Any) -> None:
        self._queue.append(message)
        self._wake.set()

    async def _write_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._queue = self._queue, []
            try:
                for frame in frames(batch):  # a burst of orders with files in them: several frames
                    await self.socket.send_bytes(frame)
            except Exception as error:  # the reader side notices the disconnect and cleans up
                log.info("node %s: send failed: %s", self.node, error)
                return

    async def close(self) -> None:
        self._writer.cancel()
        try:
            await self.socket.close()
        except Exception:
            pass


class NodeChannels:
    def __init__(self) -> None:
        self._channels: dict[str, NodeChannel] = {}

    def attach(self, channel: NodeChannel) -> NodeChannel | None:
        """Register `channel`; return the node's previous channel, which the caller closes."""
        previous = self._channels.get(channel.node)
        self._channels[channel.node] = channel
        return previous

    def detach(self, channel: NodeChannel) -> bool:
        """Forget `channel` if it is still the node's current one; True if it was."""
        if self._channels.get(channel.node) is channel:
            del self._channels[channel.node]
            return True
        return False

    def channel(self, node: str) -> NodeChannel | None:
        return self._channels.get(node)

    def send(self, node: str, message: Any) -> None:
        """Queue a message; to a node that is not connected it is dropped, since the node's next
        hello rebuilds what it needs (orders are derived from the state, not a queue)."""
        channel = self._channels.get(node)
        if channel is not None:
            channel.send(message)

    def connected(self) -> list[str]:
        return list(self._channels)

    async def close_all(self) -> None:
        """Close every node's channel, so each node says hello again. A node whose channel closed
        first may be back, on a new channel, while the others close: that one is kept."""
        for channel in list(self._channels.values()):
            await channel.close()
            self.detach(channel)
