"""Closing every node's channel (after the working set is reloaded from the store, every node is
made to say hello again): a node that is back, on a new channel, before the others' channels
have closed keeps its new channel. Were it forgotten, orders for it would be dropped while it
stays connected, and it would never be found silent."""

from __future__ import annotations

import asyncio

from drover.controller.nodes.node_channels import NodeChannel, NodeChannels


class Socket:
    """A node's WebSocket whose close takes a loop turn or two, as a real one's does."""

    def __init__(self) -> None:
        self.closed = False

    async def send_bytes(self, data: bytes) -> None:
        pass

    async def close(self, code: int = 1000) -> None:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        self.closed = True


def test_a_node_back_while_the_others_close_keeps_its_new_channel() -> None:
    async def run() -> tuple[list[str], bool, bool]:
        channels = NodeChannels()
        first, second = NodeChannel("n1", Socket()), NodeChannel("n2", Socket())
        channels.attach(first)
        channels.attach(second)
        closing = asyncio.get_running_loop().create_task(channels.close_all())
        while not first.socket.closed:  # type: ignore[attr-defined]
            await asyncio.sleep(0)
        again = NodeChannel("n1", Socket())  # n1 says hello again while n2's channel closes
        channels.attach(again)
        await closing
        return channels.connected(), channels.channel("n1") is again, second.socket.closed  # type: ignore[attr-defined]

    connected, kept, closed = asyncio.run(run())
    assert connected == ["n1"] and kept and closed
