"""A helper that runs as a user (owner_process.py) never holds up the daemon that asked: a
request has a deadline, past which the daemon's ends of the pipes are closed and the helper is
killed and reaped, however the helper is held (stopped, its pipe kept open by another process);
a reply has a bound; a helper has a bounded queue; and the helper is not dumpable. Real helper
processes, as `nobody` (root only: root switches to the user)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from drover.owner_process import CLOSE_GRACE_S, HelperBusy, OwnerProcess, OwnerProcesses

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the helper switches to another user: root only")
NOBODY = 65534
READER = "drover.execd.output_reader"


def request(path: Path, limit: int = 100) -> dict[str, object]:
    return {"path": str(path), "offset": 0, "limit": limit}


def pipes_of_this_process(but: int) -> set[str]:
    """The pipes this process holds, on any descriptor but `but`."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        if int(fd) == but:
            continue
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("pipe:"):
            found.add(target)
    return found


@pytest.fixture
def readable() -> Iterator[Path]:
    """A file `nobody` can read (pytest's own temporary directory is root's only)."""
    where = Path(tempfile.mkdtemp(prefix="drover-owner-", dir="/tmp"))
    where.chmod(0o755)
    path = where / "out"
    path.write_text("hello\n")
    path.chmod(0o644)
    yield path
    shutil.rmtree(where, ignore_errors=True)


def test_a_stopped_helper_whose_pipe_is_held_costs_its_request_the_deadline_only(readable: Path) -> None:

    async def main() -> None:
        helper = OwnerProcess(READER, NOBODY, NOBODY, [])
        try:
            await stalled_and_held(helper, readable)
        finally:
            await helper.close()

    asyncio.run(main())


async def stalled_and_held(helper: OwnerProcess, path: Path) -> None:
    """The helper answers; then it is stopped and its stdout held open from outside."""
    assert (await helper.ask(request(path), 10))["size"] == 6
    pid = helper.pid
    assert pid is not None and psutil.Process(pid).uids().real == NOBODY
    assert os.stat(f"/proc/{pid}/fd").st_uid == 0  # not dumpable: /proc/PID/fd is root's
    stdout = os.readlink(f"/proc/{pid}/fd/1")
    held = os.open(f"/proc/{pid}/fd/1", os.O_WRONLY | os.O_NONBLOCK)  # as a process forked into it would
    try:
        os.kill(pid, signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await helper.ask(request(path), 0.5)
        assert time.monotonic() - started < 2
        for _ in range(200):  # killed, and reaped by the loop (no zombie left)
            if not psutil.pid_exists(pid):
                break
            await asyncio.sleep(0.01)
        assert not psutil.pid_exists(pid)
        assert stdout not in pipes_of_this_process(but=held)  # the daemon's end is closed
        assert (await helper.ask(request(path), 10))["size"] == 6  # a new helper
        assert helper.pid != pid
    finally:
        os.close(held)


def test_requests_wait_behind_their_own_helper_within_their_deadline_and_in_a_bounded_queue(readable: Path) -> None:

    async def main() -> None:
        stalled = OwnerProcess(READER, NOBODY, NOBODY, [], max_waiting=3)
        other = OwnerProcess(READER, NOBODY, NOBODY, [])
        try:
            await queued(stalled, other, readable)
        finally:
            await stalled.close()
            await other.close()

    asyncio.run(main())


async def queued(stalled: OwnerProcess, other: OwnerProcess, path: Path) -> None:
    """`stalled` is stopped with requests queued for it; `other` (another user's) answers."""
    await stalled.ask(request(path), 10)
    assert stalled.pid is not None
    os.kill(stalled.pid, signal.SIGSTOP)
    waiting = [asyncio.ensure_future(stalled.ask(request(path), 1.0)) for _ in range(3)]
    await asyncio.sleep(0)
    with pytest.raises(HelperBusy):
        await stalled.ask(request(path), 1.0)
    started = time.monotonic()
    assert (await other.ask(request(path), 10))["size"] == 6  # another helper: not behind them
    assert time.monotonic() - started < 1.0
    outcomes = await asyncio.gather(*waiting, return_exceptions=True)
    assert all(isinstance(o, TimeoutError) for o in outcomes), outcomes  # the queued ones too
    assert time.monotonic() - started < 2.5


def test_a_reply_longer_than_the_bound_is_refused_and_the_helper_stopped(readable: Path) -> None:
    path = readable
    path.write_bytes(b"x" * 10_000)

    async def main() -> None:
        helper = OwnerProcess(READER, NOBODY, NOBODY, [], max_reply=1000)
        try:
            with pytest.raises(RuntimeError, match="longer than 1000 bytes"):
                await helper.ask(request(path, limit=10_000), 10)
            assert helper.pid is None
            assert "data" in await helper.ask(request(path, limit=100), 10)
        finally:
            await helper.close()

    asyncio.run(main())


def test_a_helper_killed_while_idle_is_replaced_at_the_next_request(readable: Path) -> None:
    async def main() -> None:
        helper = OwnerProcess(READER, NOBODY, NOBODY, [])
        try:
            await helper.ask(request(readable), 10)
            pid = helper.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)  # as its owner may
            for _ in range(200):
                if not psutil.pid_exists(pid):
                    break
                await asyncio.sleep(0.01)
            assert (await helper.ask(request(readable), 10))["size"] == 6
            assert helper.pid != pid
        finally:
            await helper.close()

    asyncio.run(main())


def test_one_helper_per_user_and_closing_ends_even_a_stopped_one_in_bounded_time(readable: Path) -> None:
    async def main() -> None:
        helpers = OwnerProcesses(READER, idle_s=60)
        mine, theirs = helpers.of(NOBODY, NOBODY, []), helpers.of(NOBODY - 1, NOBODY - 1, [])
        assert helpers.of(NOBODY, NOBODY, []) is mine and theirs is not mine
        try:
            await mine.ask(request(readable), 10)
            await theirs.ask(request(readable), 10)
            pids = [mine.pid, theirs.pid]
            assert None not in pids
            os.kill(pids[0], signal.SIGSTOP)  # type: ignore[arg-type]
        finally:
            started = time.monotonic()
            await helpers.close()
        assert time.monotonic() - started < 2 * CLOSE_GRACE_S + 1
        assert not any(psutil.pid_exists(pid) for pid in pids)  # type: ignore[arg-type]

    asyncio.run(main())
