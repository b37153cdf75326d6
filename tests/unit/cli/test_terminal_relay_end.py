"""`drover run --pty`'s relay (cli/terminal.py) when the job's end of it goes first: a relay that
closes with the client's window-size frame still unread resets the connection, and the client
takes that for the end it is, not for an error to print as a traceback."""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from drover.cli.terminal import relay


def test_a_relay_that_resets_its_connection_has_ended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(tmp_path / "pty.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)

    def hang_up_unread() -> None:
        connection, _ = server.accept()
        time.sleep(0.2)  # the client's first frame arrives, and stays unread
        connection.sendall(b"last words\n")
        connection.close()  # with unread data: the kernel resets the connection

    thread = threading.Thread(target=hang_up_unread)
    thread.start()
    with open("/dev/null") as stdin, open(tmp_path / "out", "w") as stdout:
        monkeypatch.setattr(sys, "stdin", stdin)
        monkeypatch.setattr(sys, "stdout", stdout)
        relay(path)  # returns; before, ConnectionResetError came out of it
    thread.join()
    server.close()
