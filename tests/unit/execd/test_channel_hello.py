"""What a node sends while its hello is on its way (a job that starts meanwhile: its Started
report) goes after the hello, never dropped: the hello said the attempt's job had not started,
and only that report tells the controller it did (execd/channel.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from drover.execd.channel import ControllerChannel
from drover.protocol.node_channel import Hello, KnownAttempt, Started


class SlowConnection:
    """A connection whose first send (the hello) takes a while, as on a busy node or a slow
    link; it ends, as a controller that goes away would, once `sent` holds `until` frames."""

    def __init__(self, until: int) -> None:
        self.sent: list[list[dict[str, Any]]] = []
        self.until = until
        self.done = asyncio.Event()

    async def send(self, frame: bytes) -> None:
        if not self.sent:
            await asyncio.sleep(0.05)
        self.sent.append(msgspec.json.decode(frame))
        if len(self.sent) >= self.until:
            self.done.set()

    def __aiter__(self) -> SlowConnection:
        return self

    async def __anext__(self) -> bytes:
        await self.done.wait()
        raise StopAsyncIteration


def test_a_started_report_sent_while_the_hello_goes_follows_it() -> None:
    async def scenario() -> list[list[dict[str, Any]]]:
        channel: ControllerChannel

        def hello() -> Hello:
            return Hello("n1", 2, 1024, [KnownAttempt("7.0.1", True, job_started=False)])

        channel = ControllerChannel(["/nonexistent.sock"], hello, lambda: None)
        connection = SlowConnection(until=2)
        serving = asyncio.get_running_loop().create_task(channel._serve(connection))  # type: ignore[arg-type]
        await asyncio.sleep(0.01)  # the hello on its way
        channel.send(Started("7.0.1", 123, 1000.0))
        await asyncio.wait_for(serving, timeout=10)
        return connection.sent

    hello, started = asyncio.run(scenario())
    assert [message["type"] for message in hello] == ["hello"]
    assert hello[0]["attempts"][0]["job_started"] is False
    assert [(message["type"], message["attempt"]) for message in started] == [("started", "7.0.1")]
