"""shepherd/control.JobControl's order of things, with a real child in a process group of its own
that writes down the signals it gets, and a containment that writes down freezes and thaws:
GE's shepherd_deliver_signal (a notice, then the action; a resume cancels a suspend that waits
for its notice; no second notice) and queue_conf(5)'s methods."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from drover.method_command import CommandMethod, SignalMethod
from drover.shepherd.control import JobControl
from drover.shepherd.processes import ProcessOptions

CHILD = """
import signal, sys, time
def got(signum, frame):
    with open(sys.argv[1], "a") as file:
        file.write(signal.Signals(signum).name + "\\n")
for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT, signal.SIGTERM, signal.SIGCONT):
    signal.signal(s, got)
open(sys.argv[1] + ".ready", "w").close()
while True:
    time.sleep(0.01)
"""


class Recorded:
    """A containment that writes down what it did: as the backends do (shepherd/containment), it
    knows whether it froze the attempt, and a thaw of what it did not freeze does nothing."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.frozen = False

    def freeze(self) -> None:
        self.calls.append("freeze")
        self.frozen = True

    def thaw(self) -> None:
        if self.frozen:
            self.calls.append("thaw")
            self.frozen = False


@pytest.fixture
def child(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    got = tmp_path / "got"
    process = subprocess.Popen([sys.executable, "-c", CHILD, str(got)], process_group=0)
    deadline = time.monotonic() + 10
    while not Path(f"{got}.ready").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    yield process.pid, got
    process.kill()
    process.wait()


def _got(path: Path, count: int) -> list[str]:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        lines = path.read_text().split() if path.exists() else []
        if len(lines) >= count:
            return lines
        time.sleep(0.01)
    return path.read_text().split() if path.exists() else []


def _run_until(control: JobControl, seconds: float) -> bool:
    """Turn the loop for `seconds`; whether SIGKILL came due."""
    end = time.monotonic() + seconds
    killed = False
    while time.monotonic() < end:
        killed = control.tick() or killed
        time.sleep(0.01)
    return killed


def test_default_actions_freeze_thaw_and_sigterm_then_sigkill_after_the_grace(child: tuple[int, Path]) -> None:
    pid, got = child
    box = Recorded()
    control = JobControl({}, box, kill_grace_s=0.2)  # type: ignore[arg-type]  # a recording containment
    control.start(pid)
    control.suspend()
    control.resume()
    assert box.calls == ["freeze", "thaw"]
    control.stop()  # not frozen: no second thaw (the subreaper's is a SIGCONT the job would see)
    assert _got(got, 1) == ["SIGTERM"] and box.calls == ["freeze", "thaw"]
    assert not control.tick() and _run_until(control, 0.4)


def test_gridengine_queue_conf_signal_methods_replace_the_defaults(child: tuple[int, Path]) -> None:
    pid, got = child
    box = Recorded()
    methods = {"suspend_method": SignalMethod(signal.SIGUSR1), "terminate_method": SignalMethod(signal.SIGINT)}
    control = JobControl(methods, box, kill_grace_s=5)  # type: ignore[arg-type]
    control.start(pid)
    control.suspend()
    assert _got(got, 1) == ["SIGUSR1"] and box.calls == []
    control.resume()  # no resume method: GE's SIGCONT since the suspend was a method (nothing was frozen)
    assert box.calls == [] and _got(got, 2) == ["SIGUSR1", "SIGCONT"]
    control.stop()  # the terminate method, then SIGCONT: a job its suspend method stopped meets it
    sent = [line.split(" ", 1)[1] for line in control.trace[-2:]]
    assert [line.rsplit(": ", 1)[1] for line in sent] == ["SIGINT to the job", "SIGCONT to the job"]
    # Both arrive; the child cannot tell their order: a signal that lands while Python runs the
    # other's handler has its own handler run first, inside it.
    assert sorted(_got(got, 4)[-2:]) == ["SIGCONT", "SIGINT"]


def test_a_frozen_job_that_is_stopped_is_thawed_to_meet_its_terminate(child: tuple[int, Path]) -> None:
    pid, got = child
    box = Recorded()
    control = JobControl({}, box, kill_grace_s=5)  # type: ignore[arg-type]
    control.start(pid)
    control.suspend()
    assert box.calls == ["freeze"]
    control.stop()  # frozen, it would see neither SIGTERM nor, after the grace, SIGKILL
    assert box.calls == ["freeze", "thaw"] and _got(got, 1) == ["SIGTERM"]


def test_gridengine_submit_notify_usr1_then_the_suspend_and_a_resume_cancels_a_waiting_suspend(
        child: tuple[int, Path]) -> None:
    pid, got = child
    box = Recorded()
    control = JobControl({}, box, kill_grace_s=5, notify_s=0.3)  # type: ignore[arg-type]
    control.start(pid)
    control.suspend()
    control.suspend()  # no second notice
    assert _got(got, 1) == ["SIGUSR1"] and box.calls == []
    _run_until(control, 0.5)
    assert box.calls == ["freeze"] and _got(got, 1) == ["SIGUSR1"]
    control.resume()
    control.suspend()
    control.resume()  # before the notice's time: the suspend is cancelled, nothing was frozen again
    _run_until(control, 0.5)
    assert box.calls == ["freeze", "thaw"]
    assert "cancelled" in "".join(control.trace)


def test_gridengine_submit_notify_usr2_then_sigterm_then_sigkill(child: tuple[int, Path]) -> None:
    pid, got = child
    control = JobControl({}, Recorded(), kill_grace_s=0.2, notify_s=0.3)  # type: ignore[arg-type]
    control.start(pid)
    control.suspend()
    # Seen before the stop's notice is sent: two signals a microsecond apart may be recorded
    # in either order by the child's handlers (one runs inside the other).
    assert _got(got, 1) == ["SIGUSR1"]
    started = time.monotonic()
    control.stop()  # replaces the waiting suspend
    control.stop()
    control.suspend()  # a stop is under way: nothing
    assert _got(got, 2) == ["SIGUSR1", "SIGUSR2"]
    while "SIGTERM" not in _got(got, 2):
        control.tick()
        time.sleep(0.01)
    assert time.monotonic() - started >= 0.25
    assert _got(got, 3) == ["SIGUSR1", "SIGUSR2", "SIGTERM"]
    assert _run_until(control, 0.4)


def test_gridengine_queue_conf_a_command_method_runs_once_at_a_time_and_its_status_goes_to_the_trace(
        child: tuple[int, Path], tmp_path: Path) -> None:
    pid, _ = child
    out = tmp_path / "out"
    script = tmp_path / "method.sh"
    script.write_text(f'#!/bin/sh\necho "$@" >> {out}\nsleep 0.3\nexit 5\n')
    script.chmod(0o755)
    methods = {"suspend_method": CommandMethod((str(script), "$job_pid", "$job_name"))}
    control = JobControl(methods, Recorded(), kill_grace_s=5,  # type: ignore[arg-type]
                         popen_options=ProcessOptions(str(tmp_path), None, subprocess.DEVNULL, subprocess.DEVNULL),
                         facts={"job_name": "a b"})
    control.start(pid)
    control.suspend()
    control.suspend()  # the first still runs: skipped
    trace = control.finish()
    assert out.read_text() == f"{pid} a b\n"
    assert any("suspend_method: skipped" in line for line in trace)
    assert any("suspend_method: exited 5; done all the same" in line for line in trace)
    assert os.path.exists(script)
