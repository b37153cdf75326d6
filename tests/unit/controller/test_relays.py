"""The controller's relays of users' reads and terminals: answers go to the read that asked,
only from the node that was asked; a node that goes fails its reads and hangs up its terminals."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from drover.controller.nodes.node_channels import NodeChannels
from drover.controller.nodes.relays import TERMINAL_BACKLOG, Relays
from drover.core.errors import Unavailable
from drover.protocol.node_channel import (
    CloseTerminal,
    OpenTerminal,
    OutputRead,
    ReadOutput,
    TerminalClosed,
    TerminalInput,
    TerminalOutput,
)


class FakeChannel:
    def __init__(self, node: str) -> None:
        self.node = node
        self.local = False
        self.sent: list[Any] = []

    def send(self, message: Any) -> None:
        self.sent.append(message)


def relays_with(*nodes: str) -> tuple[Relays, dict[str, FakeChannel]]:
    channels = NodeChannels()
    fakes = {node: FakeChannel(node) for node in nodes}
    for fake in fakes.values():
        channels._channels[fake.node] = fake  # type: ignore[assignment]  # only send() is used
    return Relays(channels), fakes


def test_a_read_gets_the_answer_of_the_node_it_asked() -> None:
    async def scenario() -> None:
        relays, fakes = relays_with("n1", "n2")
        reading = asyncio.ensure_future(relays.read_output("n1", "7.0.1", "stdout", 10, 100))
        await asyncio.sleep(0)
        (asked,) = fakes["n1"].sent
        assert asked == ReadOutput(asked.request, "7.0.1", "stdout", 10, 100)
        relays.take("n2", [OutputRead(asked.request, b"forged", 6)])  # another node cannot answer it
        await asyncio.sleep(0)
        assert not reading.done()
        relays.take("n1", [OutputRead(asked.request, b"hello", 15)])
        answer = await reading
        assert (answer.data, answer.size) == (b"hello", 15)
        assert relays.reads == {}

    asyncio.run(scenario())


def test_a_read_of_a_node_that_is_not_connected_or_goes_is_refused() -> None:
    async def scenario() -> None:
        relays, _ = relays_with("n1")
        with pytest.raises(Unavailable, match="not connected"):
            await relays.read_output("n9", "7.0.1", "stdout", 0, 100)
        reading = asyncio.ensure_future(relays.read_output("n1", "7.0.1", "stdout", 0, 100))
        await asyncio.sleep(0)
        relays.node_gone("n1")
        with pytest.raises(Unavailable, match="went away"):
            await reading

    asyncio.run(scenario())


def test_a_terminal_carries_both_ways_and_hangs_up() -> None:
    async def scenario() -> None:
        relays, fakes = relays_with("n1", "n2")
        terminal = relays.open_terminal("n1", "7.0.1")
        terminal.send(b"d\x00\x01x")
        assert fakes["n1"].sent == [OpenTerminal(terminal.session, "7.0.1"), TerminalInput(terminal.session, b"d\x00\x01x")]
        relays.take("n2", [TerminalOutput(terminal.session, b"not yours")])  # ignored
        relays.take("n1", [TerminalOutput(terminal.session, b"prompt$ "), TerminalClosed(terminal.session, "ended")])
        assert await terminal.output.get() == b"prompt$ "
        assert await terminal.output.get() is None and terminal.why == "ended"
        assert relays.terminals == {}
        terminal.close()  # already gone: nothing more is sent
        assert not any(isinstance(m, CloseTerminal) for m in fakes["n1"].sent)

    asyncio.run(scenario())


def test_a_user_who_stops_reading_loses_the_oldest_output_not_the_controller_memory() -> None:
    async def scenario() -> None:
        relays, fakes = relays_with("n1")
        terminal = relays.open_terminal("n1", "7.0.1")
        relays.take("n1", [TerminalOutput(terminal.session, bytes([i % 256])) for i in range(TERMINAL_BACKLOG + 10)])
        assert terminal.output.qsize() == TERMINAL_BACKLOG
        assert await terminal.output.get() == bytes([10])
        relays.node_gone("n1")
        while await terminal.output.get() is not None:
            pass
        assert "went away" in terminal.why
        terminal.close()
        assert fakes["n1"].sent[-1] == OpenTerminal(terminal.session, "7.0.1")

    asyncio.run(scenario())
