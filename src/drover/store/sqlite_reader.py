"""Reads of what the controller does not keep in memory (ended jobs, history, the event log), on
a read-only SQLite connection of their own, so that they can run on a thread beside the event
loop while the controller's own connection writes.

A reader belongs to the thread that opened it (a connection is never shared across threads).
In WAL mode a reader sees every transaction committed before its statement starts and never
blocks the writer. Its failures become StoreFaults naming the file, as the writer's do.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import msgspec

from drover.core.job import Attempt, Job, Task
from drover.core.job_state import JobState
from drover.store.base import EndedJobRecord, EventRecord, HistoryCursor, HistoryRecord, JobFilter
from drover.store.faults import fault, translated
from drover.store.sqlite import (
    JOB_COLUMNS,
    attempt_from_row,
    connect,
    events_of,
    job_from_row,
    tasks_of,
)

_decode = msgspec.json.decode
_IDS_PER_STATEMENT = 500  # well below SQLite's limit on bound parameters


class SqliteReader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.needs_reopen = False  # see store/faults.py
        try:
            self.db = self._connect()
        except sqlite3.Error as error:
            raise fault(path, error) from error

    def _connect(self) -> sqlite3.Connection:
        # mode=ro: this connection cannot write, whatever a bug asks of it.
        return connect(f"file:{quote(self.path)}?mode=ro", True, "query_only=ON", "busy_timeout=2000")

    def reopen(self) -> None:
        db = self._connect()
        self.db.close()
        self.db = db

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: every statement in it sees the same committed state."""
        self.db.execute("BEGIN")
        try:
            yield self.db
        finally:
            self.db.execute("COMMIT")

    @translated
    def ended_job_keys(self, query: JobFilter) -> list[tuple[int, float]]:
        """(id, ended_at) of the ended jobs that match, newest first: at most `query.limit`, all
        below `query.before` if it is set. Answered from the listing indexes alone."""
        where = ["ended_at IS NOT NULL"]
        args: list[Any] = []
        if query.owner:
            where.append("owner=?")
            args.append(query.owner)
        if query.name:
            where.append("name=?")
            args.append(query.name)
        if query.states:  # an ended job matches by its final state
            where.append(f"state IN ({', '.join('?' * len(query.states))})")
            args.extend(query.states)
        if query.ended_since is not None:
            where.append("ended_at >= ?")
            args.append(query.ended_since)
        if query.before is not None:
            where.append("id < ?")
            args.append(query.before)
        sql = f"SELECT id, ended_at FROM jobs WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?"
        return [(row[0], row[1]) for row in self.db.execute(sql, [*args, query.limit])]

    @translated
    def ended_jobs(self, job_ids: Sequence[int]) -> list[EndedJobRecord]:
        """Ended jobs without their task records: what a listing shows of each (task counts and
        the first task that did not complete come from the store's aggregates)."""
        found: list[EndedJobRecord] = []
        with self._snapshot() as db:
            for start in range(0, len(job_ids), _IDS_PER_STATEMENT):
                chunk = list(job_ids[start:start + _IDS_PER_STATEMENT])
                marks = ", ".join("?" * len(chunk))
                jobs = {row[0]: job_from_row(row)
                        for row in db.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id IN ({marks})", chunk)}
                counts: dict[int, dict[str, int]] = {job_id: {} for job_id in jobs}
                for job_id, state, count in db.execute(
                    f"SELECT job_id, state, COUNT(*) FROM tasks WHERE job_id IN ({marks}) GROUP BY job_id, state",
                    chunk,
                ):
                    counts[job_id][state] = count
                # SQLite gives the other columns of a min() aggregate from the row that holds the minimum.
                unfinished = {
                    row[0]: Task(row[0], row[1], JobState(row[2]), 0.0, exit_status=row[3])
                    for row in db.execute(
                        f"SELECT job_id, MIN(idx), state, exit_status FROM tasks WHERE job_id IN ({marks}) "
                        "AND state != 'completed' GROUP BY job_id",
                        chunk,
                    )
                }
                found += [EndedJobRecord(job, counts[job.id], unfinished.get(job.id)) for job in jobs.values()
                          if job.ended_at is not None]
        return found

    @translated
    def history(self, owner: str | None, limit: int, since: float | None,
                before: HistoryCursor | None = None) -> list[HistoryRecord]:
        """Ended attempts, newest first (by end time, then job, task and attempt): at most
        `limit`, all older than `before` if it is set."""
        sql = (
            "SELECT a.job_id, a.idx, a.number, a.node, a.exit, a.usage, a.started_at, a.ended_at, "
            "j.is_array, j.name, j.owner, j.submitted_at, t.state, t.attempt "
            "FROM attempts a JOIN jobs j ON j.id = a.job_id JOIN tasks t ON t.job_id = a.job_id AND t.idx = a.idx "
            "WHERE a.ended_at IS NOT NULL"
        )
        args: list[Any] = []
        if owner:
            sql += " AND j.owner=?"
            args.append(owner)
        if since is not None:
            sql += " AND a.ended_at >= ?"
            args.append(since)
        if before is not None:
            sql += " AND (a.ended_at, a.job_id, a.idx, a.number) < (?, ?, ?, ?)"
            args.extend(before)
        sql += " ORDER BY a.ended_at DESC, a.job_id DESC, a.idx DESC, a.number DESC LIMIT ?"
        args.append(limit)
        return [
            HistoryRecord(
                job_id=row[0], index=row[1], attempt=row[2], node=row[3],
                exit=_decode(row[4]) if row[4] else None, usage=_decode(row[5]) if row[5] else None,
                started_at=row[6], ended_at=row[7], is_array=bool(row[8]), name=row[9], owner=row[10],
                submitted_at=row[11], task_state=JobState(row[12]), task_attempt=row[13],
            )
            for row in self.db.execute(sql, args)
        ]

    @translated
    def events_of(self, job_id: int | None, after_seq: int, limit: int) -> list[tuple[int, EventRecord]]:
        return events_of(self.db, job_id, after_seq, limit)

    @translated
    def load_job(self, job_id: int) -> Job | None:
        """A job with all its task records (ended or not, as of the last commit)."""
        with self._snapshot() as db:
            row = db.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id=?", (job_id,)).fetchone()
            if row is None:
                return None
            job = job_from_row(row)
            job.tasks = tasks_of(db, job_id)
            return job

    @translated
    def attempts_of(self, job_id: int) -> list[Attempt]:
        return [attempt_from_row(row) for row in self.db.execute(
            "SELECT * FROM attempts WHERE job_id=? ORDER BY idx, number", (job_id,))]
