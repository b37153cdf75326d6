"""A shepherd that ran an attempt given with a lifeline serves the next one (execd/
warm_shepherds.py), through the real fork server and real shepherds: only once the execd has
released it, each attempt with records of its own, no signal sent between two attempts reaching
the second, and its death in a later attempt seen as that attempt's end, as a first one's is."""

from __future__ import annotations

import contextlib
import os
import select
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.spools import exit_status, make_spool
from tests.helpers.wait import wait_until

from drover.execd.forkserver import ForkServer
from drover.spool.process import read_pid_record


@pytest.fixture
def server() -> Iterator[ForkServer]:
    """None forked ahead: an order goes to the shepherd back from the last attempt (the server
    waits for it to come back), or to one forked for it."""
    started = ForkServer.start(warm=0)
    yield started
    started.close()


def start(server: ForkServer, spool: Path, released: int | None = None) -> tuple[int, int]:
    """Start the attempt in `spool` with a lifeline, as a node daemon does: the shepherd's pid and
    the lifeline's read end (end of file: the attempt is over). `released`: a shepherd released
    in the same message, as the node does for the attempt whose room this one takes."""
    lifeline, given = os.pipe2(os.O_CLOEXEC)
    try:
        pid = server.spawn(str(spool), lifeline=given, released=released)
    finally:
        os.close(given)
    return pid, lifeline


def over(lifeline: int, timeout: float = 20) -> None:
    """Wait for the lifeline's end of file; close it."""
    readable, _, _ = select.select([lifeline], [], [], timeout)
    assert readable, "the attempt's lifeline stayed open"
    assert os.read(lifeline, 1) == b""
    os.close(lifeline)


def served_one(server: ForkServer, tmp_path: Path) -> int:
    """A shepherd that has served one attempt (`true`), released by the execd: its pid."""
    pid, lifeline = start(server, make_spool(tmp_path, "true\n", name="6.0.1"))
    over(lifeline)
    server.release(pid)
    return pid


def shepherd_of(spool: Path) -> int:
    record = read_pid_record(str(spool / "pid"))
    assert record is not None
    return record[0]


def test_a_shepherd_released_in_the_message_of_the_next_order_runs_that_order(
        server: ForkServer, tmp_path: Path) -> None:
    first = make_spool(tmp_path, "true\n", name="7.0.1")
    pid, lifeline = start(server, first)
    over(lifeline)
    second = make_spool(tmp_path, "echo two\n", name="8.0.1", stdout=str(tmp_path / "two"))
    again, lifeline = start(server, second, released=pid)
    over(lifeline)
    assert again == pid and shepherd_of(second) == pid  # released first, then given the order
    assert exit_status(second)["exit_code"] == 0 and (tmp_path / "two").read_text() == "two\n"


def test_a_released_shepherd_runs_the_next_attempt_and_each_keeps_its_own_records(
        server: ForkServer, tmp_path: Path) -> None:
    first = make_spool(tmp_path, "echo one\n", name="7.0.1", stdout=str(tmp_path / "one"))
    pid, lifeline = start(server, first)
    over(lifeline)
    # The lifeline ends only once the attempt's records are whole.
    assert exit_status(first)["exit_code"] == 0
    server.release(pid)
    second = make_spool(tmp_path, "echo two; exit 3\n", name="8.0.1", stdout=str(tmp_path / "two"))
    again, lifeline = start(server, second)
    over(lifeline)
    assert again == pid  # no fork: the shepherd that ran the first attempt
    assert shepherd_of(first) == shepherd_of(second) == pid
    assert exit_status(second)["exit_code"] == 3
    assert (tmp_path / "one").read_text() == "one\n" and (tmp_path / "two").read_text() == "two\n"


@pytest.mark.parametrize("served_before", [False, True], ids=["a new shepherd", "a shepherd back from an attempt"])
def test_a_stop_sent_as_soon_as_the_order_is_taken_stops_the_attempt(
        server: ForkServer, tmp_path: Path, served_before: bool) -> None:
    """The execd may signal the shepherd the moment the fork server names it: that signal is the
    attempt's, and no step before the attempt's first drops it."""
    if served_before:
        served_one(server, tmp_path)
    spool = make_spool(tmp_path, "sleep 10\n", name="7.0.1")
    pid, lifeline = start(server, spool)
    os.kill(pid, signal.SIGTERM)
    over(lifeline)
    ended = exit_status(spool)
    assert ended["terminated"] is True, ended


def test_a_shepherd_not_released_is_given_nothing(server: ForkServer, tmp_path: Path) -> None:
    """Until the execd has seen its attempt end, a signal it sends for that attempt may still be
    on its way: the shepherd is not given another."""
    first = make_spool(tmp_path, "true\n", name="7.0.1")
    pid, lifeline = start(server, first)
    over(lifeline)
    second = make_spool(tmp_path, "true\n", name="8.0.1")
    other, lifeline = start(server, second)
    over(lifeline)
    assert other != pid


def test_signals_sent_for_an_attempt_after_its_end_do_not_reach_the_next(server: ForkServer, tmp_path: Path) -> None:
    first = make_spool(tmp_path, "true\n", name="7.0.1")
    pid, lifeline = start(server, first)
    over(lifeline)
    # The attempt is over, and the execd has not yet seen it: its signals for it may still come
    # (a cancel that crossed the end). Blocked, they wait in the shepherd.
    for signum in (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT, signal.SIGHUP):
        os.kill(pid, signum)
    server.release(pid)
    second = make_spool(tmp_path, "sleep 0.3; exit 5\n", name="8.0.1")
    again, lifeline = start(server, second)
    over(lifeline)
    assert again == pid
    ended = exit_status(second)
    assert (ended["exit_code"], ended["signal"], ended["terminated"]) == (5, None, False)
    trace = (second / "trace").read_text()
    assert "SIGTERM" not in trace and "SIGUSR1" not in trace


def test_a_shepherd_killed_in_a_later_attempt_ends_that_attempt_as_a_lost_one(
        server: ForkServer, tmp_path: Path) -> None:
    pid = served_one(server, tmp_path)
    second = make_spool(tmp_path, "echo started > started; sleep 30\n", name="8.0.1")
    again, lifeline = start(server, second)
    assert again == pid
    # The job may write its file before its shepherd has recorded its pid: both are waited for.
    wait_until(lambda: (tmp_path / "started").exists() and (second / "job_pid").exists(),
               describe="the second attempt's job to start, and its pid recorded")
    job = int((second / "job_pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    over(lifeline)  # at once: the job, still running, does not hold the attempt's lifeline
    os.kill(job, 0)
    assert not (second / "exit_status").exists()
    status = server.wait_status(pid)
    assert status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    with contextlib.suppress(ProcessLookupError):
        os.killpg(job, signal.SIGKILL)  # what a node daemon's lost-shepherd handling would end


def test_a_shepherd_forked_for_its_order_ends_its_attempt_with_its_lifeline(
        server: ForkServer, tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "exit 4\n", name="7.0.1")
    pid, lifeline = start(server, spool)
    over(lifeline)
    assert exit_status(spool)["exit_code"] == 4
    assert shepherd_of(spool) == pid


def test_an_attempt_that_could_not_start_leaves_its_shepherd_fit_for_the_next(
        server: ForkServer, tmp_path: Path) -> None:
    """A failure after the working directory was opened (here its output file cannot be made)
    closes what the attempt opened: the shepherd serves the next one."""
    failed = make_spool(tmp_path, "true\n", name="7.0.1", stdout=str(tmp_path / "missing" / "out"))
    pid, lifeline = start(server, failed)
    over(lifeline)
    assert "cannot open output file" in exit_status(failed)["failure"]
    server.release(pid)
    spool = make_spool(tmp_path, "true\n", name="8.0.1")
    again, lifeline = start(server, spool)
    over(lifeline)
    assert again == pid
