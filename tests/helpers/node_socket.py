"""The node's end of a controller's node channel in unit tests: what the controller sent it
(decoded), and whether the controller closed it."""

from __future__ import annotations

from typing import Any

from drover.protocol.node_channel import AppendEventLog, controller_decoder


class FakeSocket:
    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.closed = False

    async def send_bytes(self, data: bytes) -> None:
        self.messages.extend(controller_decoder.decode(data))

    async def close(self, code: int = 1000) -> None:
        self.closed = True

    def appends(self) -> list[AppendEventLog]:
        """The event-log appends the controller asked this node to write."""
        return [m for m in self.messages if isinstance(m, AppendEventLog)]
