"""The output reader reads regular files only, from an offset, and says when a file is not there
yet; the node finds the path in its own records (the spool's config, then the output index),
never in the request."""

from __future__ import annotations

import base64
import os
from pathlib import Path

from drover.execd import output_index
from drover.execd.output_reader import read
from drover.execd.relays import NodeRelays
from drover.records import AttemptConfig


def test_reads_from_an_offset_and_knows_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"0123456789")
    answer = read(str(path), 4, 3)
    assert answer["size"] == 10 and base64.b64decode(str(answer["data"])) == b"456"
    assert base64.b64decode(str(read(str(path), 20, 3)["data"])) == b""
    assert read(str(tmp_path / "none"), 0, 10) == {"size": None}
    assert "absolute" in str(read("relative", 0, 1)["error"])


def test_refuses_a_fifo_without_waiting_on_it(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert "not a regular file" in str(read(str(fifo), 0, 10)["error"])


def _config(tmp_path: Path, scratch: bool = False) -> AttemptConfig:
    return {"stdout": str(tmp_path / "job.out"), "stderr": None, "scratch": scratch,  # type: ignore[typeddict-item]
            "identity": {"user": "alice", "uid": 1001, "gid": 1001, "groups": [1001], "home": "/", "shell": "/bin/sh"}}


def test_the_node_finds_the_path_in_its_spool_then_in_its_index(tmp_path: Path) -> None:
    relays = NodeRelays(str(tmp_path), lambda message: None)
    assert relays._output_of("../etc", "stdout") == "no such attempt or stream"
    assert relays._output_of("7.0.1", "stdin") == "no such attempt or stream"
    assert "no longer on this node" in str(relays._output_of("7.0.1", "stdout"))
    output_index.remember(str(tmp_path), "7.0.1", _config(tmp_path))
    path, identity = relays._output_of("7.0.1", "stdout")  # type: ignore[misc]
    assert path == str(tmp_path / "job.out") and identity is not None and identity["uid"] == 1001
    assert relays._output_of("7.0.1", "stderr") == "the job joins its stderr into its stdout"
    output_index.remember(str(tmp_path), "8.0.1", _config(tmp_path, scratch=True))  # left with its spool
    assert "no longer on this node" in str(relays._output_of("8.0.1", "stdout"))


def test_old_index_records_are_forgotten(tmp_path: Path) -> None:
    output_index.remember(str(tmp_path), "7.0.1", _config(tmp_path))
    assert output_index.forget_old(str(tmp_path), now=1e12) == 1
    assert output_index.lookup(str(tmp_path), "7.0.1") is None


def test_keys_sent_while_the_terminal_is_connecting_are_not_lost(tmp_path: Path) -> None:
    import asyncio

    from drover.protocol.node_channel import OpenTerminal, TerminalInput

    async def scenario() -> bytes:
        (tmp_path / "7.0.1").mkdir()
        received = asyncio.get_running_loop().create_future()

        async def shepherd(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            received.set_result(await reader.readexactly(8))
            writer.close()

        server = await asyncio.start_unix_server(shepherd, str(tmp_path / "7.0.1" / "pty.sock"))
        relays = NodeRelays(str(tmp_path), lambda message: None)
        relays.open_terminal(OpenTerminal(1, "7.0.1"))
        relays.terminal_input(TerminalInput(1, b"d\x00\x01a"))  # before the connection is made
        relays.terminal_input(TerminalInput(1, b"d\x00\x01b"))
        try:
            return await asyncio.wait_for(received, 5)
        finally:
            server.close()
            await relays.close()

    assert asyncio.run(scenario()) == b"d\x00\x01ad\x00\x01b"
