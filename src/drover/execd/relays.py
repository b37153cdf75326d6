"""The node's end of a user's view of an attempt (controller/nodes/relays.py has the other): reads of
its output files, and its terminal.

A read names the attempt and the stream, never a path: the path is the one this node's records
hold (the attempt's config while its spool is here, output_index.py after), and the file is
read by an output reader running as the job's owner (output_reader.py), never by root.

A terminal is the shepherd's relay socket in the attempt's spool (shepherd/pty_relay.py), a
directory of root's that no user can write to: the execd connects to it, and passes bytes both
ways unchanged, in the relay's own frames.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
from collections.abc import Callable
from typing import Any

from drover.execd import attempt_records, output_index
from drover.execd.pe_tasks import OUTPUT_DIR, PETASK_ID
from drover.owner_process import OwnerProcesses
from drover.protocol.node_channel import (
    CloseTerminal,
    OpenTerminal,
    OutputRead,
    ReadOutput,
    TerminalClosed,
    TerminalInput,
    TerminalOutput,
)
from drover.records import IdentityRecord
from drover.shepherd.pty_relay import SOCKET
from drover.spool import layout

log = logging.getLogger("drover.execd")
MAX_READ = 1 << 20  # bytes per read: the channel carries other nodes' business too
READ_TIMEOUT_S = 10.0  # a file on a hung network filesystem costs that owner's reader only
IDLE_S = 60.0  # a reader with nothing to do for this long is stopped


class NodeRelays:
    def __init__(self, root: str, send: Callable[[Any], None]) -> None:
        self.root = root
        self.send = send
        self._readers = OwnerProcesses("drover.execd.output_reader", IDLE_S)  # one per owner
        self._terminals: dict[int, asyncio.StreamWriter | None] = {}  # session → its connection
        self._early: dict[int, list[bytes]] = {}  # input that came while the session was connecting
        self._tasks: set[asyncio.Task[None]] = set()

    # -- output files ---------------------------------------------------------------------------

    def read_output(self, order: ReadOutput) -> None:
        self._spawn(self._read(order))

    async def _read(self, order: ReadOutput) -> None:
        where = (self._task_output_of(order.attempt, order.petask, order.stream) if order.petask
                 else self._output_of(order.attempt, order.stream))
        if isinstance(where, str):
            self.send(OutputRead(order.request, error=where))
            return
        path, identity = where
        request = {"path": path, "offset": max(0, order.offset), "limit": max(0, min(order.limit, MAX_READ))}
        try:
            reader = (self._readers.of(identity["uid"], identity["gid"], identity["groups"]) if identity is not None
                      else self._readers.of(None))
            answer = await reader.ask(request, READ_TIMEOUT_S)
        except Exception as error:  # timed out, or could not start as the owner
            log.warning("attempt %s: cannot read its %s: %s", order.attempt, order.stream, error or "timed out")
            self.send(OutputRead(order.request, error=f"the node could not read the output: {error or 'timed out'}"))
            return
        if answer.get("error"):
            self.send(OutputRead(order.request, error=str(answer["error"])))
            return
        self.send(OutputRead(order.request, base64.b64decode(answer.get("data") or ""), answer.get("size")))

    def _output_of(self, attempt: str, stream: str) -> tuple[str, IdentityRecord | None] | str:
        """(path, whose rights read it) of an attempt's stream, or why there is none here."""
        if not layout.is_attempt_name(attempt) or stream not in ("stdout", "stderr"):
            return "no such attempt or stream"
        config = attempt_records.config(layout.SpoolDir(self.root, attempt))
        record = (output_index.OutputRecord(stdout=config["stdout"], stderr=config.get("stderr") or None,
                                            identity=config.get("identity"))
                  if config is not None else output_index.lookup(self.root, attempt))
        if record is None:
            return f"the output of attempt {attempt} is no longer on this node"
        path = record["stdout"] if stream == "stdout" else record["stderr"]
        if path is None:
            return "the job joins its stderr into its stdout"
        if record["identity"] is None and os.geteuid() == 0:
            return "the job's owner is not known on this node"  # never read as root
        return path, record["identity"]

    def _task_output_of(self, attempt: str, petask: str, stream: str) -> tuple[str, IdentityRecord | None] | str:
        """The same for a task of a parallel job on this node (execd/pe_tasks.py): its files in
        its spool directory's `out/`, the owner's, read as the owner."""
        if not layout.is_attempt_name(attempt) or not PETASK_ID.fullmatch(petask) or stream not in ("stdout", "stderr"):
            return "no such task or stream"
        config = attempt_records.config(layout.SpoolDir(os.path.join(self.root, attempt), petask))
        if config is None:
            return f"task {petask} of attempt {attempt} is not on this node (or no longer)"
        identity = config.get("identity")
        if identity is None and os.geteuid() == 0:
            return "the job's owner is not known on this node"  # never read as root
        return os.path.join(self.root, attempt, petask, OUTPUT_DIR, stream), identity

    # -- terminals ------------------------------------------------------------------------------

    def open_terminal(self, order: OpenTerminal) -> None:
        if order.session in self._terminals:
            return
        self._terminals[order.session] = None
        self._spawn(self._relay(order))

    async def _relay(self, order: OpenTerminal) -> None:
        why = ""
        try:
            if not layout.is_attempt_name(order.attempt):
                why = "no such attempt"
                return
            path = os.path.join(self.root, order.attempt, SOCKET)
            try:
                reader, writer = await asyncio.open_unix_connection(path)
            except OSError as error:
                why = "the job has no terminal on this node (it ended, or is not interactive)" \
                    if isinstance(error, FileNotFoundError | ConnectionRefusedError) else f"cannot reach its terminal: {error}"
                return
            if order.session not in self._terminals:  # closed while connecting
                writer.close()
                return
            self._terminals[order.session] = writer
            for data in self._early.pop(order.session, []):
                writer.write(data)
            while data := await reader.read(65536):
                self.send(TerminalOutput(order.session, data))
        finally:
            self._early.pop(order.session, None)
            writer_left = self._terminals.pop(order.session, None)
            if writer_left is not None:
                writer_left.close()
            self.send(TerminalClosed(order.session, why))

    def terminal_input(self, message: TerminalInput) -> None:
        if message.session not in self._terminals:
            return
        writer = self._terminals[message.session]
        if writer is None:  # still connecting: kept, in order, for when it is
            self._early.setdefault(message.session, []).append(message.data)
        else:
            writer.write(message.data)

    def close_terminal(self, message: CloseTerminal) -> None:
        writer = self._terminals.pop(message.session, None)
        if writer is not None:
            writer.close()  # the relay task sees the end and says so

    def drop_terminals(self) -> None:
        """A new channel: the controller forgot the sessions of the last one."""
        for session in list(self._terminals):
            self.close_terminal(CloseTerminal(session))

    # -- ------------------------------------------------------------------------------------------

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        self.drop_terminals()
        await self._readers.close()
