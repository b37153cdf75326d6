"""Signalling an attempt this execd started reads nothing of its config: what the delivery needs
(whether the job can checkpoint, its own checkpoint signal) is kept from the config the execd
wrote. An attempt re-attached after a restart has its config read once, at its first signal."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.attempt_config import NODE_OPTIONS, attempt_config

from drover.execd import attempts as attempts_module
from drover.execd.attempts import Attempts
from drover.protocol.node_channel import SignalAttempt, StartAttempt
from drover.spool import layout

SHEPHERD_PID = 999_999_999  # the signals are caught below: no process of that pid is reached


class Spawner:
    """A shepherd that is never there: its pid is this process's own, and the attempt's
    lifeline is held here, open, so the attempt never ends."""

    def __init__(self) -> None:
        self.held: list[int] = []

    def spawn(self, spool_dir: str, lifeline: int | None = None, released: int | None = None) -> int:
        if lifeline is not None:
            self.held.append(os.dup(lifeline))
        return os.getpid()

    def release(self, pid: int) -> None:
        pass

    def close(self) -> None:
        """The lifelines held: closed once the node is done with the attempt."""
        for fd in self.held:
            os.close(fd)
        self.held.clear()


class Cleanup:
    pending: dict[str, layout.SpoolDir] = {}

    def made_here(self, name: str, config: Any = None) -> None:
        pass

    def config_rewritten(self, name: str, config: Any) -> None:
        pass

    def known(self) -> list[str]:
        return []


def signals_and_config_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restarted: bool,
                             actions: list[str]) -> tuple[list[int], int]:
    """The signals the shepherd got for `actions`, and how many times the config was read for them."""
    root = tmp_path / "active"
    root.mkdir()
    delivered: list[int] = []
    reads = 0
    real_read_json = attempts_module.read_json

    def counted_read_json(path: str) -> Any:
        nonlocal reads
        if os.path.basename(path) == layout.CONFIG:
            reads += 1
        return real_read_json(path)

    def caught_kill(pid: int, signum: int) -> None:
        assert pid == SHEPHERD_PID
        delivered.append(signum)

    async def signalled() -> None:
        spawner = Spawner()
        attempts = Attempts(str(root), spawner, [].append, Cleanup(), NODE_OPTIONS)  # type: ignore[arg-type]
        try:
            config = attempt_config(str(tmp_path), "7.0.1", checkpoint_signal="SIGUSR2", owner="root")
            attempts.start(StartAttempt("7.0.1", config, "true\n"))  # type: ignore[arg-type]
            live = attempts.live["7.0.1"]
            if restarted:  # as a restarted execd re-attaches to it (recover): nothing kept
                live.signal_facts = None
            live.shepherd_pid = SHEPHERD_PID
            monkeypatch.setattr(attempts_module, "read_json", counted_read_json)
            monkeypatch.setattr(attempts_module.os, "kill", caught_kill)
            for action in actions:
                attempts.signal(SignalAttempt("7.0.1", action))
        finally:
            monkeypatch.undo()
            attempts.close()  # its pidfds too
            spawner.close()

    asyncio.run(signalled())
    return delivered, reads


def test_signals_of_an_attempt_started_here_read_no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    delivered, reads = signals_and_config_reads(tmp_path, monkeypatch, False, ["SIGUSR2", "suspend", "resume", "migrate"])
    # its own checkpoint signal goes to it; a job that cannot checkpoint is stopped for a migration
    assert delivered == [signal.SIGUSR2, signal.SIGTSTP, signal.SIGCONT, signal.SIGTERM]
    assert reads == 0


def test_a_reattached_attempts_config_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    delivered, reads = signals_and_config_reads(tmp_path, monkeypatch, True, ["SIGUSR2", "suspend", "resume", "migrate"])
    assert delivered == [signal.SIGUSR2, signal.SIGTSTP, signal.SIGCONT, signal.SIGTERM]
    assert reads == 1


class KeepsConfigs(Cleanup):
    """A cleanup that keeps what the node tells it of the configs it wrote."""

    def __init__(self) -> None:
        self.configs: dict[str, Any] = {}

    def made_here(self, name: str, config: Any = None) -> None:
        self.configs[name] = config


def test_the_config_a_node_writes_is_handed_to_the_cleanup_as_it_is_in_the_spool(tmp_path: Path) -> None:
    """Its cleanup then reads it not back (execd/cleanup.py `made_here`): what it holds must be
    what the shepherd reads."""
    root = tmp_path / "active"
    root.mkdir()
    cleanup = KeepsConfigs()

    async def started() -> None:
        attempts = Attempts(str(root), Spawner(), [].append, cleanup, {**NODE_OPTIONS, "cpus": 2})  # type: ignore[arg-type]
        try:
            config = attempt_config(str(tmp_path), "7.0.1", owner="root")
            attempts.start(StartAttempt("7.0.1", config, "true\n"))  # type: ignore[arg-type]
        finally:
            attempts.close()

    asyncio.run(started())
    written = json.loads((root / "7.0.1" / layout.CONFIG).read_bytes())
    assert cleanup.configs["7.0.1"] == written and written["cpus"] == 2


def test_a_node_gives_an_attempt_a_spare_reserve_where_one_waits(tmp_path: Path) -> None:
    from drover.spool.outcome import RESERVE_BYTES, make_reserve
    from drover.spool.spare_reserves import SpareReserves

    root = tmp_path / "active"
    root.mkdir()
    ended = layout.SpoolDir(str(root), "6.0.1")
    os.mkdir(ended.path)
    make_reserve(ended)
    spares = SpareReserves(str(root))
    assert spares.keep(ended.path, ended.name)
    inode = os.stat(os.path.join(spares.directory, "6.0.1")).st_ino

    async def started() -> None:
        attempts = Attempts(str(root), Spawner(), [].append, KeepsConfigs(), NODE_OPTIONS,  # type: ignore[arg-type]
                            spares=spares)
        try:
            for name in ("7.0.1", "8.0.1"):
                config = attempt_config(str(tmp_path), name, owner="root")
                attempts.start(StartAttempt(name, config, "true\n"))  # type: ignore[arg-type]
        finally:
            attempts.close()

    asyncio.run(started())
    assert os.stat(root / "7.0.1" / layout.RESERVE).st_ino == inode  # the spare
    made = os.stat(root / "8.0.1" / layout.RESERVE)  # none left: allocated
    assert made.st_ino != inode and made.st_size == RESERVE_BYTES
    assert not os.path.exists(spares.directory)  # a stopped node leaves none
