"""Warm shepherds (execd/warm_shepherds.py): the fork server keeps shepherds forked ahead of their
orders. One starts the next attempt it is given; one without an order does nothing, with every
signal blocked and only its pipe open; and none outlives the fork server, whether the execd
closes it or it is killed."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import psutil
from tests.helpers.spools import exit_status, make_spool
from tests.helpers.wait import wait_until

from drover.execd.forkserver import ForkServer
from drover.spool.process import read_pid_record


def warm_pids(server: ForkServer, count: int) -> set[int]:
    """The fork server's children once `count` of them wait (no attempt is running)."""
    def children() -> set[int] | None:
        found = {child.pid for child in psutil.Process(server.process.pid).children()}
        return found if len(found) == count else None

    return wait_until(children, describe=f"{count} warm shepherds")


def gone(pids: set[int]) -> bool:
    """Every one of `pids` gone (a zombie would still be a process left to reap). An orphan
    comes to this process where an earlier test made it a child subreaper (the subreaper
    containment does): reaped here, as init would."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    return not [pid for pid in pids if psutil.pid_exists(pid)]


def test_a_warm_shepherd_runs_the_attempt_it_is_given(tmp_path: Path) -> None:
    server = ForkServer.start(warm=1)
    try:
        (waiting,) = warm_pids(server, 1)
        spool = make_spool(tmp_path, "echo ran\n", stdout=str(tmp_path / "out"))
        pid = server.spawn(str(spool))
        assert pid == waiting  # the order went to the shepherd already forked, not to a new fork
        wait_until(lambda: (spool / "exit_status").exists(), describe="the attempt to end")
        assert exit_status(spool)["exit_code"] == 0
        assert (tmp_path / "out").read_text() == "ran\n"
        record = read_pid_record(str(spool / "pid"))
        assert record is not None and record[0] == waiting
        # The next one is forked once the server has nothing else to do.
        assert warm_pids(server, 1) != {waiting}
    finally:
        server.close()


def test_a_warm_shepherd_does_nothing_before_its_order(tmp_path: Path) -> None:
    server = ForkServer.start(warm=2)
    try:
        pids = warm_pids(server, 2)
        for pid in pids:
            process = psutil.Process(pid)
            assert process.children() == []  # nothing started
            assert process.status() == psutil.STATUS_SLEEPING
            assert os.getsid(pid) == pid  # a session of its own: no group signal of ours reaches it
            status = Path(f"/proc/{pid}/status").read_text()
            blocked = int(next(line for line in status.splitlines() if line.startswith("SigBlk:")).split()[1], 16)
            assert blocked & (1 << (signal.SIGTERM - 1)) and blocked & (1 << (signal.SIGUSR1 - 1))
            # Its only descriptors: stdin, stdout, stderr and its end of its socket to the server.
            fds = {int(fd) for fd in os.listdir(f"/proc/{pid}/fd")}
            others = {fd for fd in fds if fd > 2}
            assert len(others) == 1
            assert os.readlink(f"/proc/{pid}/fd/{others.pop()}").startswith("socket:")
        assert list(tmp_path.iterdir()) == []  # and nothing written anywhere we can see
    finally:
        server.close()
    wait_until(lambda: gone(pids), describe="the warm shepherds to be gone")


def test_the_warm_shepherds_end_with_the_fork_server_and_running_attempts_go_on(tmp_path: Path) -> None:
    server = ForkServer.start(warm=2)
    pids = warm_pids(server, 2)
    spool = make_spool(tmp_path, "sleep 0.3; echo done\n", stdout=str(tmp_path / "out"))
    running = server.spawn(str(spool))
    assert running in pids
    waiting = warm_pids(server, 3) - {running}  # the one given the order is still running
    server.close()  # the execd goes: end of file on the server's socket
    assert server.process.returncode == 0
    wait_until(lambda: gone(waiting), describe="the warm shepherds to be gone")
    wait_until(lambda: (spool / "exit_status").exists(), describe="the running attempt to finish")
    assert (tmp_path / "out").read_text() == "done\n"


def test_the_warm_shepherds_end_when_the_fork_server_is_killed() -> None:
    server = ForkServer.start(warm=2)
    pids = warm_pids(server, 2)
    server.process.kill()
    server.process.wait()
    server.close()
    # Orphaned, each reads the end of file of its pipe and exits; init reaps it.
    wait_until(lambda: gone(pids), describe="the warm shepherds to be gone")
