"""A personal cluster's store after a long, busy life: 1,000,000 ended jobs, built fast.

The store is made by the controller itself: a personal cluster is started in a state directory
of its own (so the migrations run), one `drover submit -- true` is run through the CLI as a user
runs it, and the cluster is stopped. That job's rows (its job row with the whole spec, its
script and the user's environment, its task, its attempt with the exit and usage records, its events but the
cleanup steps) are the template: the history is `jobs` copies of it, ids 1..N, ending one after
the other over the past year (every 20th failed, exit code 1), inserted in one transaction by
SQL alone. The accounting rows are written by the store's own triggers as the attempts go in.
The events of the start-up (the node connecting) are dropped with the template's.

    .venv/bin/python bench/history_store.py /tmp/history.db [--jobs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
DROVER = str(BIN / "drover")
YEAR = 365 * 86400.0
NAMES = ("true", "sim", "align", "train", "plot")


def template_store(config: str = "") -> tuple[Path, Path]:
    """A store the controller made and migrated, holding one ended `true` job submitted through
    the CLI; returns (the temporary directory, the store's file)."""
    root = Path(tempfile.mkdtemp(prefix="drvh-", dir="/tmp"))
    state, work = root / "state", root / "work"
    state.mkdir(mode=0o700)
    work.mkdir()
    if config:
        (state / "drover.toml").write_text(config)
    env = dict(os.environ, DROVER_STATE_DIR=str(state))
    env.pop("DROVER_SOCKET", None)

    def drover(*args: str) -> str:
        return subprocess.run([DROVER, *args], env=env, cwd=work, capture_output=True, text=True,
                              check=True).stdout

    drover("up", "--cpus", "2")
    try:
        job = drover("submit", "--parsable", "--", "true").strip()
        drover("wait", "-q", job)
    finally:
        drover("down")
    return root, state / "drover.db"


def build(path: str, jobs: int = 1_000_000, config: str = "") -> dict[str, float]:
    """Write the store with `jobs` ended jobs to `path` (replaced if it exists); returns what it took."""
    began = time.perf_counter()
    root, made = template_store(config)
    try:
        db = sqlite3.connect(str(made), isolation_level=None)
        # The bulk load is one transaction without a journal: it makes a new file, nothing to
        # recover. The controller opens it in WAL mode again (set back below as well).
        db.execute("PRAGMA journal_mode=DELETE")
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.execute("PRAGMA cache_size=-1000000")
        db.execute("PRAGMA temp_store=MEMORY")
        (template,) = db.execute("SELECT id, ended_at FROM jobs").fetchall()
        template_id, template_end = template
        now = time.time()
        step = YEAR / jobs
        db.execute("BEGIN")
        db.execute("CREATE TEMP TABLE n (i INTEGER PRIMARY KEY, shift REAL NOT NULL, failed INTEGER NOT NULL)")
        # Job i ends (jobs - i) steps before an hour ago; shift: what moves the template's times there.
        db.execute("INSERT INTO temp.n WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?) "
                   "SELECT i, ? - (? - i) * ? - ?, i % 20 = 0 FROM c",
                   (jobs, now - 3600, jobs, step, template_end))
        for table in ("jobs", "tasks", "attempts", "events", "job_payloads"):
            db.execute(f"CREATE TEMP TABLE t_{table} AS SELECT * FROM main.{table} WHERE job_id = ?"
                       if table != "jobs" else "CREATE TEMP TABLE t_jobs AS SELECT * FROM main.jobs WHERE id = ?",
                       (template_id,))
        db.execute("DELETE FROM temp.t_events WHERE kind = 'cleanup_step'")
        for table in ("attempts", "tasks", "events", "jobs", "accounting", "job_payloads"):
            db.execute(f"DELETE FROM main.{table}")
        timings = {"template (s)": time.perf_counter() - began}
        t0 = time.perf_counter()
        names = " ".join(f"WHEN {k} THEN '{name}'" for k, name in enumerate(NAMES))
        db.execute(
            "INSERT INTO main.jobs SELECT n.i, t.owner, CASE n.i % 5 " + names + " END, t.submitted_at + n.shift, "
            "t.priority, t.cpus, t.memory_mib, t.indices, t.is_array, t.max_running, t.after_ok, t.spec, t.fresh_from, "
            "t.fresh_state, t.fresh_skip, t.ended_at + n.shift, CASE WHEN n.failed THEN 'failed' ELSE t.state END, "
            "t.end_reason, t.event_log_node, t.dependencies, t.begin_at, t.payload_bytes "
            "FROM temp.n n, temp.t_jobs t ORDER BY n.i")
        db.execute("INSERT INTO main.job_payloads SELECT n.i, t.script, t.environment, t.stage_in "
                   "FROM temp.n n, temp.t_job_payloads t ORDER BY n.i")  # each job's script and environment
        timings["jobs (s)"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        db.execute(
            "INSERT INTO main.tasks SELECT n.i, t.idx, CASE WHEN n.failed THEN 'failed' ELSE t.state END, "
            "t.state_since + n.shift, t.attempt, t.cancel_requested, CASE WHEN n.failed THEN 1 ELSE t.exit_status END, "
            "t.requeue_requested, t.hold_requested, t.suspended_by FROM temp.n n, temp.t_tasks t ORDER BY n.i")
        timings["tasks (s)"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        db.execute(
            "INSERT INTO main.attempts SELECT n.i, t.idx, t.number, t.node, t.cpu_ids, t.dispatched_at + n.shift, "
            "t.started_at + n.shift, t.ended_at + n.shift, "
            "CASE WHEN n.failed THEN json_set(t.exit, '$.exit_code', 1) ELSE t.exit END, "
            "json_set(t.usage, '$.started_at', json_extract(t.usage, '$.started_at') + n.shift, "
            "'$.ended_at', json_extract(t.usage, '$.ended_at') + n.shift), t.cleanup, t.gres, t.others, t.pe_tasks "
            "FROM temp.n n, temp.t_attempts t ORDER BY n.i")
        timings["attempts and accounting (s)"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        db.execute(
            "INSERT INTO main.events (time, job_id, idx, attempt, kind, detail) "
            "SELECT t.time + n.shift, n.i, t.idx, t.attempt, "
            "CASE WHEN n.failed AND t.kind = 'completed' THEN 'failed' ELSE t.kind END, "
            "CASE WHEN n.failed AND t.kind = 'completed' THEN json_set(t.detail, '$.trigger', 'fail', '$.after', 'failed') "
            "WHEN n.failed AND t.kind = 'job_ended' THEN json_set(t.detail, '$.state', 'failed') "
            "WHEN n.failed AND t.kind = 'exited' THEN json_set(t.detail, '$.exit_code', 1) "
            "WHEN t.kind = 'submitted' THEN json_set(t.detail, '$.name', CASE n.i % 5 " + names + " END) "
            "ELSE t.detail END FROM temp.n n, temp.t_events t ORDER BY n.i, t.seq")
        timings["events (s)"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        db.execute("COMMIT")
        db.execute("PRAGMA journal_mode=WAL")
        counts = {table: db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                  for table in ("jobs", "tasks", "attempts", "events", "accounting")}
        db.close()
        timings["commit (s)"] = time.perf_counter() - t0
        shutil.move(str(made), path)
        for suffix in ("-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    timings["total (s)"] = time.perf_counter() - began
    return {**timings, **{f"{table} rows": float(count) for table, count in counts.items()},
            "size (MiB)": os.path.getsize(path) / 2**20}


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("path", help="the store's file to write")
    options.add_argument("--jobs", type=int, default=1_000_000)
    args = options.parse_args()
    for key, value in build(args.path, args.jobs).items():
        print(f"{key:<30} {value:,.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
