"""A user's view of an attempt on its node, carried over the node's channel: reads of its output
files (`drover logs`, `drover run`) and its terminal (`drover run --pty`, qrsh, srun --pty).

Users never reach a node themselves: the controller, which already checked that the job is
theirs to see, asks the node that runs it, and relays the answer. What the node reads, it reads
as the job's owner, at the path its own records hold; a request names only the attempt.

Nothing here is kept in the store: a read that finds no node, or a node that goes, ends with an
error the user sees, and the user asks again.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Any

from drover.controller.nodes.node_channels import NodeChannels
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

RELAYED = (OutputRead, TerminalOutput, TerminalClosed)
READ_TIMEOUT_S = 30.0
TERMINAL_BACKLOG = 256  # frames from the node not yet taken by the user: past it, the oldest go


class Terminal:
    """One user's connection to one attempt's terminal, through the node that runs it."""

    def __init__(self, relays: Relays, node: str, session: int) -> None:
        self.node = node
        self.session = session
        self._relays = relays
        self.output: asyncio.Queue[bytes | None] = asyncio.Queue()  # None: the terminal hung up
        self.why = ""

    def send(self, data: bytes) -> None:
        self._relays.channels.send(self.node, TerminalInput(self.session, data))

    def close(self) -> None:
        if self._relays.terminals.pop(self.session, None) is not None:
            self._relays.channels.send(self.node, CloseTerminal(self.session))

    def _heard(self, data: bytes | None) -> None:
        if self.output.qsize() >= TERMINAL_BACKLOG:
            self.output.get_nowait()  # a user who stopped reading loses the oldest, as a terminal would
        self.output.put_nowait(data)


class Relays:
    def __init__(self, channels: NodeChannels) -> None:
        self.channels = channels
        self.reads: dict[int, tuple[str, asyncio.Future[OutputRead]]] = {}
        self.terminals: dict[int, Terminal] = {}
        self._ids = itertools.count(1)

    async def read_output(self, node: str, attempt: str, stream: str, offset: int, limit: int,
                          petask: str = "") -> OutputRead:
        """What the node answers for one read; Unavailable when the node is not connected or
        does not answer in time."""
        if self.channels.channel(node) is None:
            raise Unavailable(f"node {node}, which holds the output, is not connected")
        request = next(self._ids)
        answer: asyncio.Future[OutputRead] = asyncio.get_running_loop().create_future()
        self.reads[request] = (node, answer)
        self.channels.send(node, ReadOutput(request, attempt, stream, offset, limit, petask))
        try:
            return await asyncio.wait_for(answer, READ_TIMEOUT_S)
        except TimeoutError:
            raise Unavailable(f"node {node} did not answer in {READ_TIMEOUT_S:.0f}s") from None
        finally:
            self.reads.pop(request, None)

    def open_terminal(self, node: str, attempt: str) -> Terminal:
        if self.channels.channel(node) is None:
            raise Unavailable(f"node {node}, which runs the job, is not connected")
        terminal = Terminal(self, node, next(self._ids))
        self.terminals[terminal.session] = terminal
        self.channels.send(node, OpenTerminal(terminal.session, attempt))
        return terminal

    def take(self, node: str, messages: Sequence[Any]) -> None:
        """Deliver what `node` sent for reads and terminals (and leave its other messages)."""
        for message in messages:
            if isinstance(message, OutputRead):
                waiting = self.reads.get(message.request)
                if waiting is not None and waiting[0] == node and not waiting[1].done():
                    waiting[1].set_result(message)
            elif isinstance(message, TerminalOutput | TerminalClosed):
                terminal = self.terminals.get(message.session)
                if terminal is None or terminal.node != node:
                    continue  # one node cannot write to another's terminals
                if isinstance(message, TerminalOutput):
                    terminal._heard(message.data)
                else:
                    terminal.why = message.why
                    self.terminals.pop(message.session, None)
                    terminal._heard(None)

    def node_gone(self, node: str) -> None:
        """The node's channel closed: its reads fail and its terminals hang up."""
        for owner, answer in list(self.reads.values()):
            if owner == node and not answer.done():
                answer.set_exception(Unavailable(f"node {node} went away before it answered"))
        for session, terminal in list(self.terminals.items()):
            if terminal.node == node:
                del self.terminals[session]
                terminal.why = f"node {node} went away"
                terminal._heard(None)
