"""Commits per second of a small batch of changes on each store: one task's new state and its
event (what a job's start report commits), and an attempt's end (its task, its attempt with the
exit and usage, four events, as a node's exit report and the cleanup steps commit), SQLite with synchronous NORMAL and FULL, and a
private PostgreSQL server with its defaults (fsync and synchronous_commit on), over its Unix
socket and over loopback TCP. One transaction per commit, as the controller makes them.

    .venv/bin/python bench/store_commit.py [--commits N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.helpers.postgres import PrivateServer  # noqa: E402

from drover.core.job import Attempt, Task  # noqa: E402
from drover.core.job_state import JobState  # noqa: E402
from drover.store.base import Changes, Store, open_store  # noqa: E402
from drover.store.sqlite import SqliteStore  # noqa: E402


def a_start(n: int) -> Changes:
    changes = Changes()
    changes.task(Task(1, n % 100, JobState.RUNNING, float(n), 1))
    changes.event(float(n), "started", 1, n % 100, 1, node="n1")
    return changes


def an_end(n: int) -> Changes:
    changes = Changes()
    changes.task(Task(1, n, JobState.COMPLETED, float(n), 1))
    changes.attempt(Attempt(1, n, 1, "n1", (0,), float(n), float(n), float(n) + 0.01,
                            {"exit_code": 0, "signal": None, "failure": None, "timed_out": False,
                             "terminated": False, "out_of_memory": False},
                            {"user_cpu_s": 0.001, "sys_cpu_s": 0.001, "max_rss_kib": 1000, "wall_s": 0.01}))
    for kind in ("exited", "cleanup_step", "cleanup_step", "completed"):
        changes.event(float(n), kind, 1, n, 1, node="n1")
    return changes


KINDS = {"a start": a_start, "an end": an_end}


def commits_per_second(store: Store, commits: int, make: Callable[[int], Changes]) -> float:
    started = time.perf_counter()
    for n in range(commits):
        store.commit(make(n))
    return commits / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=2000)
    args = parser.parse_args()
    results: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory() as directory:
        for mode in ("NORMAL", "FULL"):
            for kind, make in KINDS.items():
                store = SqliteStore(f"{directory}/{mode}-{kind}.db", synchronous=mode)
                results.append((f"SQLite WAL, synchronous={mode}: {kind}", commits_per_second(store, args.commits, make)))
                store.close()
    server = PrivateServer().start(durable=True)
    try:
        for name, url in (("Unix socket", server.url), ("loopback TCP", server.tcp_url)):
            for kind, make in KINDS.items():
                store = open_store(url(server.create_database()))
                results.append((f"PostgreSQL, {name}: {kind}", commits_per_second(store, args.commits, make)))
                store.close()
    finally:
        server.stop()
    print(f"{'store':<44} {'commits/s':>10}")
    for name, rate in results:
        print(f"{name:<44} {rate:>10,.0f}")


if __name__ == "__main__":
    main()
