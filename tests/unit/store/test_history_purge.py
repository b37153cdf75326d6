"""Retention: ended jobs older than the cut-off go, with their tasks, attempts, accounting rows,
events and kept files, in batches; nothing younger, no job still running, and never the newest
event (the log's numbering goes on from it)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from drover.controller.service import ControllerService, Settings
from drover.store.base import open_store
from drover.store.sql_store import Db, SqlStore

DAY = 86400.0
NOW = 1_790_000_000.0


def job(db: Db, job_id: int, ended_at: float | None) -> None:
    """A job of one task and one attempt, ended at `ended_at` (None: still running), with events."""
    db.execute("INSERT INTO jobs (id, owner, name, submitted_at, priority, cpus, memory_mib, indices, is_array, "
               "after_ok, spec, ended_at, state) VALUES (?, 'alice', 'j', ?, 0, 1, 0, '[[0,0,1]]', 0, '[]', ?, ?, ?)",
               (job_id, (ended_at or NOW) - 100, json.dumps({"queue": "default", "script": "true\n"}), ended_at,
                "completed" if ended_at else None))
    db.execute("INSERT INTO tasks (job_id, idx, state, state_since, attempt) VALUES (?, 0, ?, ?, 1)",
               (job_id, "completed" if ended_at else "running", ended_at or NOW))
    db.execute("INSERT INTO attempts (job_id, idx, number, node, cpu_ids, dispatched_at, started_at, ended_at, "
               "exit, usage) VALUES (?, 0, 1, 'n1', '[0]', ?, ?, ?, ?, ?)",
               (job_id, (ended_at or NOW) - 60, (ended_at or NOW) - 50, ended_at,
                json.dumps({"exit_code": 0}) if ended_at else None, json.dumps({"wall_s": 50}) if ended_at else None))
    for kind in ("submitted", "dispatched", "job_ended"):
        db.execute("INSERT INTO events (time, job_id, kind) VALUES (?, ?, ?)", ((ended_at or NOW) - 10, job_id, kind))


def filled(url: str) -> SqlStore:
    store = open_store(url)
    assert isinstance(store, SqlStore)
    with store.transaction() as db:
        for job_id in range(1, 26):  # 25 jobs that ended 400 days ago, one a day older each
            job(db, job_id, NOW - (400 + job_id) * DAY)
        job(db, 26, NOW - 10 * DAY)  # recent
        job(db, 27, None)  # still running
        db.execute("INSERT INTO events (time, job_id, kind) VALUES (?, NULL, 'node_connected')", (NOW - 500 * DAY,))
        db.execute("INSERT INTO events (time, job_id, kind) VALUES (?, NULL, 'node_connected')", (NOW - DAY,))
    return store


def count(store: SqlStore, table: str, where: str = "TRUE") -> int:
    return int(store.db.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}").fetchone()[0])


def test_the_purge_removes_exactly_what_ended_before_the_cut_off(store_url: str) -> None:
    store = filled(store_url)
    assert count(store, "accounting") == 26
    newest = store.db.execute("SELECT MAX(seq) FROM events").fetchone()[0]
    first = store.purge_ended(NOW - 365 * DAY, 10)
    assert first == list(range(25, 15, -1))  # the oldest first, ten of them
    rest = store.purge_ended(NOW - 365 * DAY, 10), store.purge_ended(NOW - 365 * DAY, 10)
    assert sorted(rest[0] + rest[1]) == list(range(1, 16)) and store.purge_ended(NOW - 365 * DAY, 10) == []
    assert [row[0] for row in store.db.execute("SELECT id FROM jobs ORDER BY id")] == [26, 27]
    for table in ("tasks", "attempts", "accounting"):
        assert count(store, table, "job_id <= 25") == 0 and count(store, table) == 2 - (table == "accounting")
    assert count(store, "events", "job_id <= 25") == 0 and count(store, "events", "job_id > 25") == 6
    assert count(store, "events", "job_id IS NULL") == 1  # the old node event went, the recent one stays
    assert store.db.execute("SELECT MAX(seq) FROM events").fetchone()[0] == newest
    store.close()


def test_the_controller_purges_in_batches_with_the_files_it_kept(tmp_path: Path, store_url: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from drover.controller.upkeep import purges

    monkeypatch.setattr(purges, "PURGE_BATCH", 10)  # 25 jobs: three transactions
    store = filled(store_url)
    files = tmp_path / "files"
    for job_id in (3, 26):
        (files / f"{job_id}.0.1").mkdir(parents=True)
        (files / f"{job_id}.0.1" / "result.txt").write_text("kept\n")
    service = ControllerService(store, Settings(files_dir=str(files), history_days=365), clock=lambda: NOW)

    async def purge() -> int:
        return await service.purge_once()

    assert asyncio.run(purge()) == 25
    assert not (files / "3.0.1").exists() and (files / "26.0.1" / "result.txt").exists()
    assert asyncio.run(purge()) == 0
    store.close()
