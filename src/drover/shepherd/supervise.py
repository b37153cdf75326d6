"""Watch the running job: forward signals to its process group, enforce the time limit, and on
a terminate request or at the time limit run the sequence warning signal → grace → SIGKILL.

GE shepherd, "Running the job": the parent waits for the child to exit; signals to deliver go
to the process group of its child.
"""

from __future__ import annotations

import os
import select
import signal
import time
from dataclasses import dataclass

from drover.shepherd.signals import SignalInbox

FORWARDED = (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
TERMINATE = signal.SIGTERM  # sent to the shepherd: stop the job (cancel)
WATCHED = (TERMINATE, *FORWARDED)


@dataclass(slots=True)
class Ending:
    wait_status: int
    rusage: object  # resource.struct_rusage
    timed_out: bool = False
    terminated: bool = False


def supervise(job_pid: int, inbox: SignalInbox, time_limit_s: int | None, kill_grace_s: float) -> Ending:
    pidfd = os.pidfd_open(job_pid)
    started = time.monotonic()
    deadline = started + time_limit_s if time_limit_s else None
    kill_at: float | None = None  # set once the warning signal went out
    timed_out = terminated = False
    try:
        while True:
            now = time.monotonic()
            wake_at = min(t for t in (deadline, kill_at, now + 3600) if t is not None)
            ready, _, _ = select.select([pidfd, inbox.fileno()], [], [], max(wake_at - now, 0))
            if pidfd in ready:
                break
            for signum in inbox.drain():
                if signum == TERMINATE and kill_at is None:
                    terminated, deadline = True, None
                    kill_at = _warn(job_pid, kill_grace_s)
                elif signum in FORWARDED:
                    _killpg(job_pid, signum)
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                timed_out, deadline = True, None
                kill_at = _warn(job_pid, kill_grace_s)
            if kill_at is not None and now >= kill_at:
                _killpg(job_pid, signal.SIGKILL)
                kill_at = float("inf")
    finally:
        os.close(pidfd)
    _, wait_status, rusage = os.wait4(job_pid, 0)
    return Ending(wait_status, rusage, timed_out, terminated)


def _warn(job_pid: int, kill_grace_s: float) -> float:
    _killpg(job_pid, signal.SIGTERM)
    return time.monotonic() + kill_grace_s


def _killpg(job_pid: int, signum: int) -> None:
    try:
        os.killpg(job_pid, signum)  # the job leads its own process group
    except (ProcessLookupError, PermissionError):
        pass
