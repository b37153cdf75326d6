"""Reads of what the controller does not keep in memory (ended jobs, history, the event log),
written once for every backend, on a read-only connection of the reader's own, so that they
can run on a thread beside the event loop while the controller's own connection writes.

A reader belongs to the thread that opened it (a connection is never shared across threads).
Each statement sees every transaction committed before it starts and never blocks the writer.
Its failures become StoreFaults naming the store, as the writer's do.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import msgspec

from drover.core.accounting import AccountingFacts, GroupSummary
from drover.core.job import Attempt, Job, Task
from drover.core.job_state import JobState
from drover.store.base import (
    EndedJobRecord,
    EventRecord,
    HistoryCursor,
    HistoryFilter,
    HistoryRecord,
    JobFilter,
)
from drover.store.dialect import Dialect
from drover.store.faults import StoreFault, translated
from drover.store.rows import JOB_COLUMNS, job_from_row
from drover.store.sql_store import (
    IDS_PER_STATEMENT,
    Db,
    attempts_of,
    ended_jobs_where,
    events_of,
    tasks_of,
)

_decode = msgspec.json.decode


class SqlReader:
    db: Db
    dialect: Dialect
    path: str
    needs_reopen: bool

    def fault(self, error: Exception) -> StoreFault | None:
        raise NotImplementedError

    def reopen(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    @contextmanager
    def _snapshot(self) -> Iterator[Db]:
        """One read transaction: every statement in it sees the same committed state."""
        self.db.execute(self.dialect.begin_snapshot)
        try:
            yield self.db
        finally:
            self.db.execute("COMMIT")

    @translated
    def ended_job_keys(self, query: JobFilter) -> list[tuple[int, float]]:
        """(id, ended_at) of the ended jobs that match, newest first: at most `query.limit`, all
        below `query.before` if it is set. Answered from the listing indexes alone."""
        where, args = ended_jobs_where(query)
        sql = f"SELECT id, ended_at FROM jobs WHERE {where} ORDER BY id DESC LIMIT ?"
        return [(row[0], row[1]) for row in self.db.execute(sql, [*args, query.limit])]

    @translated
    def ended_jobs(self, job_ids: Sequence[int]) -> list[EndedJobRecord]:
        """Ended jobs without their task records: what a listing shows of each (task counts and
        the first task that did not complete come from the store's aggregates)."""
        found: list[EndedJobRecord] = []
        with self._snapshot() as db:
            for start in range(0, len(job_ids), IDS_PER_STATEMENT):
                chunk = list(job_ids[start:start + IDS_PER_STATEMENT])
                marks = ", ".join("?" * len(chunk))
                jobs = {row[0]: job_from_row(row)
                        for row in db.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id IN ({marks})", chunk)}
                counts: dict[int, dict[str, int]] = {job_id: {} for job_id in jobs}
                for job_id, state, count in db.execute(
                    f"SELECT job_id, state, COUNT(*) FROM tasks WHERE job_id IN ({marks}) GROUP BY job_id, state",
                    chunk,
                ):
                    counts[job_id][state] = count
                unfinished = {
                    row[0]: Task(row[0], row[1], JobState(row[2]), 0.0, exit_status=row[3])
                    for row in db.execute(self.dialect.first_unfinished.format(marks), chunk)
                }
                found += [EndedJobRecord(job, counts[job.id], unfinished.get(job.id)) for job in jobs.values()
                          if job.ended_at is not None]
        return found

    @translated
    def history(self, owner: str | None, limit: int, since: float | None,
                before: HistoryCursor | None = None, where: HistoryFilter | None = None) -> list[HistoryRecord]:
        """Ended attempts, newest first (by end time, then job, task and attempt): at most
        `limit`, all older than `before` if it is set, those `where` selects (`owner` and
        `since`, if set, narrow it). Read from the accounting table's indexes: a page costs its
        rows, whatever the length of the history."""
        where = _narrowed(where, owner, since)
        conditions, args = self._conditions(where)
        if before is not None:
            conditions.append("(c.ended_at, c.job_id, c.idx, c.number) < (?, ?, ?, ?)")
            args.extend(before)
        sql = (
            "SELECT c.job_id, c.idx, c.number, c.node, a.exit, a.usage, c.started_at, c.ended_at, "
            "j.is_array, c.name, c.owner, c.submitted_at, t.state, t.attempt, c.state, c.queue, c.eligible_at, "
            "c.cpus, c.memory_mib, c.time_limit_s, j.priority, j.end_reason "
            "FROM accounting c "
            "JOIN attempts a ON a.job_id = c.job_id AND a.idx = c.idx AND a.number = c.number "
            "JOIN jobs j ON j.id = c.job_id JOIN tasks t ON t.job_id = c.job_id AND t.idx = c.idx"
            + (f" WHERE {' AND '.join(conditions)}" if conditions else "")
            + " ORDER BY c.ended_at DESC, c.job_id DESC, c.idx DESC, c.number DESC LIMIT ?"
        )
        args.append(limit)
        return [
            HistoryRecord(
                job_id=row[0], index=row[1], attempt=row[2], node=row[3],
                exit=_decode(row[4]) if row[4] else None, usage=_decode(row[5]) if row[5] else None,
                started_at=row[6], ended_at=row[7], is_array=bool(row[8]), name=row[9], owner=row[10],
                submitted_at=row[11], task_state=JobState(row[12]), task_attempt=row[13], state=row[14],
                queue=row[15], eligible_at=row[16], cpus=row[17], memory_mib=row[18], time_limit_s=row[19],
                priority=row[20], end_reason=row[21],
            )
            for row in self.db.execute(sql, args)
        ]

    @translated
    def accounting_facts(self, where: HistoryFilter) -> list[AccountingFacts]:
        """Every ended attempt `where` selects, as a summary reads it: from the accounting table
        alone (its indexes choose the rows), a few numbers each."""
        conditions, args = self._conditions(where)
        sql = (
            "SELECT c.job_id, c.owner, c.queue, c.node, c.ended_at, c.started_at - c.eligible_at, "
            "COALESCE(c.ended_at - c.started_at, 0), c.cpus, c.cpu_s, c.peak_bytes, c.memory_mib FROM accounting c"
            + (f" WHERE {' AND '.join(conditions)}" if conditions else "")
        )
        return [AccountingFacts(*row) for row in self.db.execute(sql, args)]

    @translated
    def history_summary(self, by: str, where: HistoryFilter) -> list[GroupSummary]:
        """The ended attempts `where` selects, grouped per user, queue, node or day (the local
        day each ended), in one statement: core/accounting.py's summarise() says what each
        figure is (nearest-rank percentiles), and this gives the same figures from SQL."""
        key = _GROUP_KEYS.get(by)
        if key is None:
            raise ValueError(f"cannot group by {by!r}")
        if by == "day":
            key = self.dialect.day.format(key)
        conditions, args = self._conditions(where)
        d = self.dialect
        # The divisions are of doubles on both backends (PostgreSQL would divide a bigint by a
        # literal 1048576.0 as numeric, with other rounding). A peak of 0 is not known (no cgroup
        # measured it and the max RSS was not the job's own): no memory efficiency, as summarise().
        sql = f"""
            WITH f AS (
                SELECT {key} AS k, c.job_id, c.cpu_s, COALESCE(c.ended_at - c.started_at, 0) AS wall,
                       CASE WHEN c.started_at IS NOT NULL THEN {d.greatest}(c.started_at - c.eligible_at, 0) END AS wait,
                       CASE WHEN c.cpu_s IS NOT NULL AND c.cpus > 0 AND c.ended_at > c.started_at
                            THEN c.cpu_s / (c.cpus * (c.ended_at - c.started_at)) END AS ce,
                       CASE WHEN c.peak_bytes > 0 AND c.memory_mib > 0
                            THEN c.peak_bytes / (c.memory_mib * CAST(1048576 AS DOUBLE PRECISION)) END AS me
                FROM accounting c {"WHERE " + " AND ".join(conditions) if conditions else ""}
            ), r AS (
                SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY wait NULLS LAST) AS wr,
                       COUNT(wait) OVER (PARTITION BY k) AS wn,
                       ROW_NUMBER() OVER (PARTITION BY k ORDER BY ce NULLS LAST) AS cr,
                       COUNT(ce) OVER (PARTITION BY k) AS cn,
                       ROW_NUMBER() OVER (PARTITION BY k ORDER BY me NULLS LAST) AS mr,
                       COUNT(me) OVER (PARTITION BY k) AS mn
                FROM f
            )
            SELECT k, COUNT(DISTINCT job_id), COUNT(*), {d.total.format("cpu_s")} / 3600, {d.total.format("wall")} / 3600,
                   MIN(CASE WHEN wait IS NOT NULL AND wr * 100 >= 50 * wn THEN wait END),
                   MIN(CASE WHEN wait IS NOT NULL AND wr * 100 >= 90 * wn THEN wait END),
                   MIN(CASE WHEN ce IS NOT NULL AND cr * 100 >= 50 * cn THEN ce END),
                   MIN(CASE WHEN me IS NOT NULL AND mr * 100 >= 50 * mn THEN me END)
            FROM r GROUP BY k ORDER BY k"""
        return [GroupSummary(*row) for row in self.db.execute(sql, args)]

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
        return attempts_of(self.db, job_id)

    def _conditions(self, where: HistoryFilter) -> tuple[list[str], list[Any]]:
        """The WHERE terms (on the accounting table, as `c`) and their arguments."""
        conditions: list[str] = []
        args: list[Any] = []
        for column, value in (("owner", where.owner), ("queue", where.queue), ("node", where.node),
                              ("job_id", where.job_id)):
            if value is not None and value != "":
                conditions.append(f"c.{column} = ?")
                args.append(value)
        if where.states:
            conditions.append(f"c.state IN ({', '.join('?' * len(where.states))})")
            args.extend(where.states)
        if where.name:
            conditions.append(self.dialect.glob.format("c.name"))
            args.append(self.dialect.glob_argument(where.name))
        if where.since is not None:
            conditions.append("c.ended_at >= ?")
            args.append(where.since)
        if where.until is not None:
            conditions.append("c.ended_at < ?")
            args.append(where.until)
        return conditions, args


# Each grouping's key, as SQL: a day is the local calendar day the attempt ended on (the
# dialect's `day` of this).
_GROUP_KEYS = {"user": "c.owner", "queue": "c.queue", "node": "c.node", "day": "c.ended_at"}


def _narrowed(where: HistoryFilter | None, owner: str | None, since: float | None) -> HistoryFilter:
    """`where` with the owner and the lower time bound given on their own, if set."""
    where = where if where is not None else HistoryFilter()
    if owner:
        where = replace(where, owner=owner)
    if since is not None:
        where = replace(where, since=since if where.since is None else max(since, where.since))
    return where
