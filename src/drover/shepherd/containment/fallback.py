"""No writable cgroups: the shepherd becomes the child subreaper of the job's process tree, so
orphans (double forks, setsid daemons) stay its descendants, and it kills them with a loop."""

from __future__ import annotations

import ctypes
import os
import signal
import time

from drover.records import ContainmentRecord
from drover.shepherd.containment.common import describe

PR_SET_CHILD_SUBREAPER = 36


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as file:
                    children = [int(word) for word in file.read().split()]
            except OSError:
                continue
            found.extend(children)
            frontier.extend(children)
    return found


class Subreaper:
    name = "subreaper"
    memory_limit_mib = 0
    hidden_gpus: list[int] = []  # no devices controller: only the environment hides the node's GPUs
    pids_limit = 0  # no pids controller: RLIMIT_NPROC would count the owner's every process (docs/security.md)

    def __init__(self) -> None:
        self.me = os.getpid()
        self.frozen = False  # freeze stopped the attempt, and nothing has let it go since

    def enter(self) -> None:
        pass

    def leave(self) -> None:
        pass

    def kill_all(self) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            victims = _descendants(self.me)
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            while True:  # reap what was ours (orphans came to us as the subreaper)
                try:
                    reaped, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if reaped == 0:
                    break
            if not victims:
                return
            time.sleep(0.001)

    def freeze(self) -> None:
        self.frozen = True
        for pid in _descendants(self.me):
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass

    def thaw(self) -> None:
        if not self.frozen:
            return
        self.frozen = False
        for pid in _descendants(self.me):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def pids_refused(self) -> int:
        return 0

    def oom_killed(self) -> bool:
        return False

    def oom_kills(self) -> int:
        return 0

    def peak_memory_bytes(self) -> int | None:
        return None

    def cpu_time_s(self) -> float | None:
        return None

    def remove(self) -> None:
        pass

    def record(self) -> ContainmentRecord:
        return describe(self.name, {})


def create(attempt: str, memory_mib: int) -> Subreaper | None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return None
    return Subreaper()
