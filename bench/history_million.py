"""The history after a year of a busy cluster: fills a fresh SQLite store with 1,000,000 ended
attempts (50 users, a few far busier than the rest; 5 queues; 100 nodes; 365 days; one job in
twenty requeued once) through the store's own schema and triggers, then times the queries
people ask through the controller's read path (SqliteReader):

  last100      the newest 100 attempts of one user (drover history -u USER -n 100)
  user-month   a user's last 30 days, summarised per day (drover history -u USER --since -30d --by day)
  queue-week   a queue's last 7 days, summarised per user (drover history -q QUEUE --since -7d --by user)
  failed       a user's newest 100 failed attempts (drover history -u USER -s failed -n 100)
  name-glob    the newest 100 attempts whose job name matches a glob, everyone's
  all-queues   the whole year summarised per queue (not a typical query: every row is read)

Each is run 5 times (after one unmeasured run); the median and the spread (min-max) are printed.
Usage: python bench/history_million.py [--records N] [--db PATH] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from drover.store.base import HistoryFilter  # noqa: E402
from drover.store.sqlite import SqliteStore  # noqa: E402
from drover.store.sqlite_reader import SqliteReader  # noqa: E402

USERS = [f"user{n:02d}" for n in range(50)]
USER_WEIGHTS = [1 / (rank + 1) for rank in range(50)]  # a few busy users, a long tail
QUEUES = ["default", "short", "long", "gpu", "bigmem"]
QUEUE_WEIGHTS = [40, 30, 15, 10, 5]
NODES = [f"node{n:03d}" for n in range(100)]
STATES = ["completed"] * 90 + ["failed"] * 6 + ["cancelled"] * 2 + ["timeout", "out_of_memory"]
DAY = 86400.0


def fill(path: str, records: int, now: float, seed: int = 1) -> None:
    """`records` ended attempts, in one transaction of executemany."""
    rng = random.Random(seed)
    store = SqliteStore(path)
    db = store.db
    jobs, tasks, attempts = [], [], []
    job_id = 0
    made = 0
    while made < records:
        job_id += 1
        owner = rng.choices(USERS, USER_WEIGHTS)[0]
        queue = rng.choices(QUEUES, QUEUE_WEIGHTS)[0]
        cpus = rng.choice((1, 1, 1, 2, 4, 8, 16))
        memory = rng.choice((0, 1024, 2048, 4096, 16384))
        submitted = now - rng.random() * 365 * DAY
        numbers = 2 if rng.random() < 0.05 and made + 2 <= records else 1
        state = rng.choice(STATES)
        clock = submitted
        for number in range(1, numbers + 1):
            started = clock + rng.expovariate(1 / 600)
            wall = rng.expovariate(1 / 3600) + 1
            ended = started + wall
            clock = ended
            cpu = wall * cpus * rng.uniform(0.05, 1.0)
            exit_code = 0 if state == "completed" or number < numbers else 1
            exit_record = {"exit_code": exit_code, "signal": None, "failure": None, "timed_out": state == "timeout",
                           "terminated": state == "cancelled", "out_of_memory": state == "out_of_memory"}
            usage = {"user_cpu_s": cpu * 0.9, "sys_cpu_s": cpu * 0.1, "max_rss_kib": rng.randrange(1000, 8_000_000),
                     "minor_faults": 0, "major_faults": 0, "voluntary_switches": 0, "involuntary_switches": 0,
                     "wall_s": wall, "started_at": started, "ended_at": ended}
            attempts.append((job_id, 0, number, rng.choice(NODES), "[0]", started - 1, started, ended,
                             json.dumps(exit_record), json.dumps(usage), None, None))
            made += 1
        spec = json.dumps({"queue": queue, "time_limit_s": rng.choice((None, 3600, 86400)), "script": "run\n"})
        jobs.append((job_id, owner, f"{rng.choice(('sim', 'align', 'train', 'plot'))}-{job_id % 97}", submitted, 0,
                     cpus, memory, "[[0,0,1]]", 0, None, "[]", spec, 1, "pending", "[]", clock, state))
        tasks.append((job_id, 0, state, clock, numbers, 0, 0 if state == "completed" else 1, 0, 0))
    started_at = time.perf_counter()
    db.execute("BEGIN")
    db.executemany("INSERT INTO jobs (id, owner, name, submitted_at, priority, cpus, memory_mib, indices, is_array, "
                   "max_running, after_ok, spec, fresh_from, fresh_state, fresh_skip, ended_at, state) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", jobs)
    db.executemany("INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", tasks)
    db.executemany("INSERT INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", attempts)
    db.execute("COMMIT")
    print(f"filled {made:,} attempts of {job_id:,} jobs in {time.perf_counter() - started_at:.1f} s "
          f"({os.path.getsize(path) / 2**20:.0f} MiB)")
    store.close()


def timed(run: Callable[[], Any], times: int = 5) -> tuple[list[float], Any]:
    result = run()  # warm the page cache, as a controller's would be
    found = []
    for _ in range(times):
        started = time.perf_counter()
        result = run()
        found.append((time.perf_counter() - started) * 1000)
    return found, result


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--records", type=int, default=1_000_000)
    options.add_argument("--db", help="the store's file (default: a temporary one)")
    options.add_argument("--keep", action="store_true", help="keep the store afterwards")
    args = options.parse_args()
    folder = tempfile.mkdtemp(prefix="history-bench-")
    path = args.db or os.path.join(folder, "drover.db")
    now = time.time()
    if not os.path.exists(path):
        fill(path, args.records, now)
    reader = SqliteReader(path)
    user, queue = USERS[3], "short"  # an ordinary busy user; the second queue
    month = HistoryFilter(owner=user, since=now - 30 * DAY, until=now)
    week = HistoryFilter(queue=queue, since=now - 7 * DAY, until=now)
    queries: dict[str, Callable[[], Any]] = {
        "last100": lambda: reader.history(user, 100, None),
        "user-month": lambda: reader.history_summary("day", month),
        "queue-week": lambda: reader.history_summary("user", week),
        "failed": lambda: reader.history(user, 100, None, where=HistoryFilter(states=("failed",))),
        "name-glob": lambda: reader.history(None, 100, None, where=HistoryFilter(name="train-1*")),
        "all-queues": lambda: reader.history_summary("queue", HistoryFilter()),
    }
    print(f"{'query':<12} {'rows':>7} {'median ms':>10} {'min ms':>8} {'max ms':>8}")
    for name, run in queries.items():
        times, result = timed(run, 5 if name != "all-queues" else 3)
        print(f"{name:<12} {len(result):>7} {statistics.median(times):>10.2f} {min(times):>8.2f} {max(times):>8.2f}")
    reader.close()
    if not args.keep and not args.db:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        os.rmdir(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
