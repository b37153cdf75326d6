"""Steps of the shepherd's sequence (shepherd/main.py), each taken alone on a spool directory of
its own: what it writes, what it tells the execd, what it hands to the steps after it."""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import socket
from pathlib import Path
from typing import Any, cast

import pytest
from tests.helpers.attempt_config import attempt_config

from drover.shepherd import setup
from drover.shepherd.config import read_config
from drover.shepherd.containment import Containment
from drover.shepherd.main import (
    Attempt,
    read_attempt_config,
    record_job_pid,
    record_outcome,
    record_pid,
)
from drover.shepherd.methods import Method
from drover.shepherd.signals import SignalInbox
from drover.shepherd.supervise import Ending
from drover.shepherd.trace import Trace
from drover.spool import layout
from drover.spool.process import read_pid_record, read_starttime


class FakeContainment:
    """What record_outcome asks of a containment, and what it did to it."""

    name = "subreaper"
    pids_limit = 64

    def __init__(self) -> None:
        self.removed = False

    def peak_memory_bytes(self) -> int | None:
        return 4096

    def cpu_time_s(self) -> float | None:
        return None  # a containment that cannot tell: the usage says nothing of it

    def remove(self) -> None:
        self.removed = True


class FakeInbox:
    def __init__(self, kept: list[int]) -> None:
        self.kept = kept

    def drain(self) -> list[int]:
        kept, self.kept = self.kept, []
        return kept


def spool_of(tmp_path: Path) -> layout.SpoolDir:
    spool = layout.SpoolDir(str(tmp_path), "7.0.1")
    os.makedirs(spool.path)
    return spool


def attempt_of(spool: layout.SpoolDir, containment: object, env: dict[str, str] | None = None) -> Attempt:
    tmpdir = os.path.join(spool.path, "tmp")
    os.makedirs(tmpdir)
    return Attempt(spool, Trace(), read_config(attempt_config(spool.root)), cast(Containment, containment),
                   setup.for_attempt(0, [], {}, 0), None, tmpdir, env or {})


def hints_of(spool: layout.SpoolDir) -> socket.socket:
    hints = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    hints.bind(spool.notify_socket)
    hints.settimeout(5)
    return hints


def read(path: str) -> Any:
    with open(path) as file:
        return json.load(file)


def test_step_1_records_the_shepherds_pid_with_its_start_time(tmp_path: Path) -> None:
    spool, trace = spool_of(tmp_path), Trace()
    assert record_pid(spool, trace) == os.getpid()
    assert read_pid_record(spool.record(layout.PID)) == (os.getpid(), read_starttime(os.getpid()))
    assert trace.lines[-1].endswith(f"shepherd started (pid {os.getpid()})")


def test_step_2_reads_the_config_the_execd_wrote(tmp_path: Path) -> None:
    spool, trace = spool_of(tmp_path), Trace()
    config = attempt_config(str(tmp_path), time_limit_s=30)
    Path(spool.record(layout.CONFIG)).write_text(json.dumps(config))
    inbox = cast(SignalInbox, FakeInbox([]))  # no debug pause asked for: the inbox is not read
    assert dataclasses.astuple(read_attempt_config(spool, trace, inbox, os.getpid())) == dataclasses.astuple(
        read_config(config))
    assert trace.lines[-1].endswith("config read")


def test_step_6_records_the_jobs_pid_and_environment_privately_then_hints_the_execd(tmp_path: Path) -> None:
    spool = spool_of(tmp_path)
    hints = hints_of(spool)
    try:
        attempt = attempt_of(spool, FakeContainment(), env={"SECRET": "s3", "A": "1"})
        kept = record_job_pid(attempt, 4242, cast(SignalInbox, FakeInbox([10, 12])))
        assert kept == [10, 12]  # the signals that came before the job, for supervise to send on
        assert Path(spool.record(layout.JOB_PID)).read_text() == "4242\n"
        environment = Path(spool.record(layout.ENVIRONMENT))
        assert environment.read_text() == "A=1\nSECRET=s3\n"
        assert environment.stat().st_mode & 0o777 == 0o600
        assert hints.recv(100) == b"started 7.0.1 4242"  # the pid with the hint: the execd reads no record
        assert attempt.trace.lines[-1].endswith("job started (pid 4242, containment subreaper)")
    finally:
        hints.close()


def test_step_9_records_the_exit_status_with_the_usage_in_it_last_and_removes_the_containment(
        tmp_path: Path) -> None:
    spool = spool_of(tmp_path)
    hints = hints_of(spool)
    try:
        containment = FakeContainment()
        attempt = attempt_of(spool, containment)
        ending = Ending(3 << 8, resource.getrusage(resource.RUSAGE_SELF), timed_out=True)
        attempt.inherited_rss_kib = ending.rusage.ru_maxrss - 1  # the job went above the shepherd's mark
        epilog = Method("epilog", "node", "true")
        code = record_outcome(attempt, ending, [(epilog, 2)], ["stdout: the filesystem is full"], 5,
                              started_at=100.0, ended_at=160.0, wall_s=60.0)
        assert code == 0
        assert containment.removed and not os.path.exists(attempt.tmpdir)
        end = read(spool.record(layout.EXIT_STATUS))
        usage = end.pop("usage")
        assert (usage["started_at"], usage["ended_at"], usage["wall_s"]) == (100.0, 160.0, 60.0)
        assert usage["cgroup_peak_memory_bytes"] == 4096 and "cgroup_cpu_s" not in usage
        assert usage["containment"] == "subreaper" and usage["max_rss_kib"] == ending.rusage.ru_maxrss
        assert usage["max_rss_inherited_kib"] == ending.rusage.ru_maxrss - 1
        assert end == {
            "exit_code": 3, "signal": None, "failure": None, "timed_out": True, "terminated": False,
            "out_of_memory": False, "methods": [{"step": "epilog", "level": "node", "exit_code": 2}],
            "pids_refused": 5, "pids_max": 64, "notes": ["stdout: the filesystem is full"],
        }
        assert not os.path.exists(spool.record(layout.USAGE))  # no record of its own
        assert os.path.exists(spool.record(layout.SHEPHERD_ABOUT_TO_EXIT))
        assert Path(spool.record(layout.TRACE)).read_text().splitlines()[-1].endswith(
            "about to exit; exit_status follows")
        assert hints.recv(100) == b"exited 7.0.1"
    finally:
        hints.close()


def test_step_9_records_the_exit_status_with_the_usage_in_one_write_last(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GE: "After a job exits, job information is spooled ... containing: exit code, usage /
    accounting information". One atomic write for both (a temporary file renamed into place),
    after the trace and shepherd_about_to_exit: the usage is there whenever the exit status is,
    which the node waits for, and no usage is there without it. Counted at the system calls."""
    spool = spool_of(tmp_path)
    hints = hints_of(spool)
    written: list[str] = []
    renamed: list[str] = []
    real_open, real_rename = os.open, os.rename

    def counted_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR) and os.path.dirname(os.fsdecode(path)) == spool.path:
            written.append(os.path.basename(os.fsdecode(path)))
        return real_open(path, flags, *args, **kwargs)

    def counted_rename(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
        if os.path.dirname(os.fsdecode(target)) == spool.path:
            renamed.append(os.path.basename(os.fsdecode(target)))
        real_rename(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "open", counted_open)
    monkeypatch.setattr(os, "rename", counted_rename)
    try:
        attempt = attempt_of(spool, FakeContainment())
        record_outcome(attempt, Ending(0, resource.getrusage(resource.RUSAGE_SELF)), [], [], 0,
                       started_at=1.0, ended_at=2.0, wall_s=1.0)
    finally:
        hints.close()
    assert renamed == [layout.TRACE, layout.SHEPHERD_ABOUT_TO_EXIT, layout.EXIT_STATUS]
    assert written == [f".{name}.tmp" for name in renamed]
    assert read(spool.record(layout.EXIT_STATUS))["usage"]["wall_s"] == 1.0
