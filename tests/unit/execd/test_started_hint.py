"""A job's start is reported from the shepherd's "started" hint alone when the hint carries the
job's pid (and whether it has a terminal): the execd opens no record of the attempt for it. A
hint without them (a shepherd of an earlier version) or none at all (a lost datagram, an
attempt re-attached after the execd's restart): the records are read, as before."""

from __future__ import annotations

import asyncio
import builtins
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from drover.execd import attempts as attempts_module
from drover.execd.attempts import Attempts, LiveAttempt
from drover.protocol.node_channel import Started
from drover.spool import layout


class Unused:
    """A spawner and a cleanup the start's report does not reach."""

    pending: dict[str, layout.SpoolDir] = {}

    def known(self) -> list[str]:
        return []


def started_after(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hint: bytes,
                  records: Callable[[layout.SpoolDir], None] = lambda spool: None) -> tuple[list[Any], list[str]]:
    """What the execd sends after `hint` comes for a live attempt "7.0.1", and which of its
    records it opened or looked at meanwhile."""
    root = tmp_path / "active"
    root.mkdir()
    spool = layout.SpoolDir(str(root), "7.0.1")
    os.mkdir(spool.path)
    records(spool)
    sent: list[Any] = []
    touched: list[str] = []
    real_open, real_os_open, real_exists = builtins.open, os.open, os.path.exists

    def counted_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file).startswith(spool.path):
            touched.append(os.path.basename(str(file)))
        return real_open(file, *args, **kwargs)

    def counted_os_open(file: Any, *args: Any, **kwargs: Any) -> int:  # a record read (spool/atomic.py)
        if str(file).startswith(spool.path):
            touched.append(os.path.basename(str(file)))
        return real_os_open(file, *args, **kwargs)

    def counted_exists(path: Any) -> bool:
        if str(path).startswith(spool.path):
            touched.append(os.path.basename(str(path)))
        return real_exists(path)

    async def hinted() -> None:
        attempts = Attempts(str(root), Unused(), sent.append, Unused(), {})  # type: ignore[arg-type]
        try:
            attempts.live[spool.name] = LiveAttempt(spool, os.getpid())
            monkeypatch.setattr(builtins, "open", counted_open)
            monkeypatch.setattr(os, "open", counted_os_open)
            monkeypatch.setattr(attempts_module.os.path, "exists", counted_exists)
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as shepherd:
                shepherd.sendto(hint, spool.notify_socket)
            for _ in range(500):  # the datagram is read by the event loop
                if sent:
                    break
                await asyncio.sleep(0.01)
        finally:
            monkeypatch.undo()
            attempts.close()

    asyncio.run(hinted())
    return sent, touched


def test_a_hint_with_the_pid_reports_the_start_without_reading_a_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sent, touched = started_after(tmp_path, monkeypatch, b"started 7.0.1 4242")
    assert [(s.attempt, s.job_pid, s.pty_socket) for s in sent if isinstance(s, Started)] == [("7.0.1", 4242, None)]
    assert touched == []


def test_a_hint_with_a_terminal_names_its_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sent, touched = started_after(tmp_path, monkeypatch, b"started 7.0.1 4242 pty")
    [started] = sent
    assert started.job_pid == 4242 and started.pty_socket == str(tmp_path / "active" / "7.0.1" / "pty.sock")
    assert touched == []


def write_pid_and_terminal(spool: layout.SpoolDir) -> None:
    Path(spool.record(layout.JOB_PID)).write_text("4343\n")
    Path(spool.record("pty.sock")).touch()


@pytest.mark.parametrize("hint", [b"started 7.0.1", b"started 7.0.1 not-a-pid"])
def test_a_hint_without_the_pid_reads_the_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  hint: bytes) -> None:
    sent, touched = started_after(tmp_path, monkeypatch, hint, write_pid_and_terminal)
    [started] = sent
    assert started.job_pid == 4343 and started.pty_socket == str(tmp_path / "active" / "7.0.1" / "pty.sock")
    assert sorted(touched) == [layout.JOB_PID, "pty.sock"]


def test_only_the_execds_own_user_may_send_it_hints_whatever_its_umask(tmp_path: Path) -> None:
    """A hint's pid is reported as it comes, so another user must not be able to send one: the
    socket is the owner's alone even when the execd was started with a umask of 0."""
    root = tmp_path / "active"
    root.mkdir()
    root.chmod(0o711)

    async def bound() -> tuple[int, list[str], int | None]:
        attempts = Attempts(str(root), Unused(), lambda message: None, Unused(), {})  # type: ignore[arg-type]
        try:
            path = os.path.join(root, layout.NOTIFY_SOCKET)
            mode = os.stat(path).st_mode & 0o777
            refused = None
            if os.geteuid() == 0:  # another user's try to send a hint
                pid = os.fork()
                if pid == 0:
                    code = 1
                    try:
                        os.setgid(65534)
                        os.setuid(65534)
                        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as other:
                            other.sendto(b"started 7.0.1 1", path)
                        code = 0
                    except PermissionError:
                        code = 13
                    finally:
                        os._exit(code)
                refused = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            return mode, sorted(os.listdir(root)), refused
        finally:
            attempts.close()

    before = os.umask(0)
    try:
        mode, names, refused = asyncio.run(bound())
    finally:
        os.umask(before)
    assert mode == 0o600 and names == [layout.NOTIFY_SOCKET]
    assert refused in (13, None), "another user sent the execd a hint"
