"""Commits per second of a small batch of changes (one task's new state and its event, what a
job's start report commits) on each store: SQLite with synchronous NORMAL and FULL, and a
private PostgreSQL server with its defaults (fsync and synchronous_commit on), over its Unix
socket and over loopback TCP. One transaction per commit, as the controller makes them.

    .venv/bin/python bench/store_commit.py [--commits N]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.helpers.postgres import PrivateServer  # noqa: E402

from drover.core.job import Task  # noqa: E402
from drover.core.job_state import JobState  # noqa: E402
from drover.store.base import Changes, Store, open_store  # noqa: E402
from drover.store.sqlite import SqliteStore  # noqa: E402


def commits_per_second(store: Store, commits: int) -> float:
    started = time.perf_counter()
    for n in range(commits):
        changes = Changes()
        changes.task(Task(1, n % 100, JobState.RUNNING, float(n), 1))
        changes.event(float(n), "started", 1, n % 100, 1, node="n1")
        store.commit(changes)
    return commits / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=2000)
    args = parser.parse_args()
    results: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory() as directory:
        for mode in ("NORMAL", "FULL"):
            store = SqliteStore(f"{directory}/{mode}.db", synchronous=mode)
            results.append((f"SQLite WAL, synchronous={mode}", commits_per_second(store, args.commits)))
            store.close()
    server = PrivateServer().start(durable=True)
    try:
        for name, url in (("Unix socket", server.url(server.create_database())),
                          ("loopback TCP", server.tcp_url(server.create_database()))):
            store = open_store(url)
            results.append((f"PostgreSQL, {name}", commits_per_second(store, args.commits)))
            store.close()
    finally:
        server.stop()
    print(f"{'store':<34} {'commits/s':>10}")
    for name, rate in results:
        print(f"{name:<34} {rate:>10,.0f}")


if __name__ == "__main__":
    main()
