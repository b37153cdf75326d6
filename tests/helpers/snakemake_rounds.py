"""When to interrupt snakemake so that it cancels what it submitted: its remote executors take
their jobs out of the list they cancel on an interrupt while they ask their status, and put
those still running back after. A Ctrl-C that lands between two rounds of status queries (the
executor's event loop asleep until the next) finds them all on it; one that lands during a
query kills the status command too, and the executor may fail before it cancels anything."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

# epoll_wait and epoll_pwait, where asyncio's sleep waits
EPOLL_WAITS = {"x86_64": ("232", "281"), "aarch64": ("22",)}.get(platform.machine(), ())


def sleeping_between_rounds(pid: int, seconds: int) -> bool:
    """Whether one of the process's threads waits in epoll for up to `seconds` (give or take
    1 s): the executor's event loop sleeping between two rounds of status queries, seen in
    /proc/PID/task/TID/syscall (the call's number, then its arguments; epoll's 4th is the
    timeout in ms)."""
    if not EPOLL_WAITS:
        pytest.skip(f"the epoll system calls' numbers on {platform.machine()} are not known here")
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            call = (task / "syscall").read_text().split()
        except OSError:  # the thread ended
            continue
        if len(call) > 4 and call[0] in EPOLL_WAITS and (seconds - 1) * 1000 < int(call[4], 16) <= seconds * 1000:
            return True
    return False
