"""What a test left running: the processes below the test process, but the ones meant to live on
(the session's database server, a module's own cluster). The guards of tests/conftest.py and of
modules whose cluster outlives single cases fail a test with this list, after killing them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

import psutil

from tests.helpers.postgres import server_processes


def left_behind(kept: Iterable[int] = ()) -> list[tuple[psutil.Process, str]]:
    """Each process left, with its name. `kept`: pids that may live on, with their descendants.
    The session's private PostgreSQL server is always kept: it may be a child of the test
    process (one made a subreaper inherits the daemonised postmaster)."""
    # Listed before the spared ones are: a process the server forks meanwhile (an autovacuum
    # worker, a backend) is then either among the spared or a child of one of them.
    candidates = psutil.Process().children(recursive=True)
    spared = set(server_processes())
    for pid in kept:
        with contextlib.suppress(psutil.NoSuchProcess):
            spared |= {pid} | {child.pid for child in psutil.Process(pid).children(recursive=True)}
    found = []
    for process in candidates:
        if process.pid in spared:
            continue
        try:  # not a zombie, and not gone since it was listed (a job's last process may be exiting)
            if process.ppid() in spared:
                continue
            if process.status() != psutil.STATUS_ZOMBIE:
                found.append((process, process.name()))
        except psutil.NoSuchProcess:
            continue
    return found


def kill_all(found: list[tuple[psutil.Process, str]]) -> list[tuple[int, str]]:
    """Kill what `left_behind` found; (pid, name) of each, for the failure's message."""
    for process, _ in found:
        with contextlib.suppress(psutil.Error):
            process.kill()
    return [(process.pid, name) for process, name in found]
