"""The SQLite store: one file, WAL mode, one transaction per batch of changes.

Durability: every commit is in the WAL before the caller is answered. With the default
`synchronous=NORMAL`, a committed change survives the controller being killed at any instant;
it may not survive the machine losing power before the next checkpoint. `synchronous=FULL`
(store option) survives that too, at about a tenth of the commit rate (see MEASUREMENTS.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from drover.core.arrays import TaskIndices
from drover.core.dependencies import Dependencies, Dependency
from drover.core.gres import devices_from_hello, hello_form
from drover.core.job import Attempt, Job, JobSpec, Task, with_given_up
from drover.core.job_state import JobState
from drover.core.membership import TokenRecord
from drover.core.node import Node
from drover.core.node_state import NodeState
from drover.core.queues import QueueRecord
from drover.core.resources import Resources
from drover.protocol.canonical import canonical
from drover.store.base import Changes, EventRecord, JobFilter, WorkingSet
from drover.store.faults import translated
from drover.store.migrate import migrate_sqlite

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.store.sqlite_reader import SqliteReader

_dumps = json.JSONEncoder(separators=(",", ":")).encode


def _spec_text(spec: JobSpec) -> str:
    """The spec as stored: its canonical encoding, the bytes a signature over it covers."""
    return canonical(spec).decode()

JOB_COLUMNS = (
    "id, owner, name, submitted_at, priority, cpus, memory_mib, indices, is_array, max_running, "
    "after_ok, spec, fresh_from, fresh_state, fresh_skip, ended_at, state, end_reason, event_log_node, "
    "dependencies, begin_at"
)



def connect(target: str, uri: bool, *pragmas: str) -> sqlite3.Connection:
    """A connection in autocommit mode with `pragmas` set, closed again if one fails.
    check_same_thread is off: whoever stops a reading thread may close its connection."""
    db = sqlite3.connect(target, uri=uri, isolation_level=None, check_same_thread=False)
    try:
        for pragma in pragmas:
            db.execute(f"PRAGMA {pragma}")
    except BaseException:
        db.close()
        raise
    return db

class SqliteStore:
    def __init__(self, path: str, synchronous: str = "NORMAL") -> None:
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        self.path = path
        self.synchronous = synchronous
        self.needs_reopen = False  # see store/faults.py: set after a failure that poisons the connection
        self.db = self._connect()
        self.schema_version = migrate_sqlite(self.db)
        self._last_seq: int = self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]

    def _connect(self) -> sqlite3.Connection:
        # A writer that finds the database locked (a backup, a sqlite3 shell) waits busy_timeout
        # before the request is answered 503 with the cause; it never waits unboundedly.
        return connect(self.path, False, "journal_mode=WAL", f"synchronous={self.synchronous}", "foreign_keys=OFF",
                       "busy_timeout=2000")

    def reopen(self) -> None:
        """A new connection to the same file, once the old one failed in a way it keeps (a
        corrupt header restored from a backup). Nothing was committed meanwhile: the event
        sequence goes on from the store's."""
        db = self._connect()
        self._last_seq = db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]
        self.db.close()
        self.db = db

    def close(self) -> None:
        self.db.close()

    # -- writing ---------------------------------------------------------------------------

    @translated
    def commit(self, changes: Changes) -> None:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            if changes.new_jobs:
                db.executemany(
                    f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES ({', '.join('?' * 21)})",
                    [_job_row(job) for job in changes.new_jobs],
                )
            if changes.jobs:
                db.executemany(
                    "UPDATE jobs SET priority=?, fresh_from=?, fresh_state=?, fresh_skip=?, ended_at=?, "
                    "state=?, end_reason=? WHERE id=?",
                    [
                        (job.priority, job.fresh_from, job.fresh_state.value, _dumps(sorted(job.fresh_skip)),
                         job.ended_at, job.state.value if job.state else None, job.end_reason, job.id)
                        for job in changes.jobs.values()
                    ],
                )
            if changes.specs:
                db.executemany("UPDATE jobs SET spec=? WHERE id=?",
                               [(_spec_text(changes.jobs[job_id].spec), job_id) for job_id in changes.specs])
            if changes.tasks:
                db.executemany(
                    "INSERT OR REPLACE INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (t.job_id, t.index, t.state.value, t.state_since, t.attempt, int(t.cancel_requested),
                         t.exit_status, int(t.requeue_requested), int(t.hold_requested))
                        for t in changes.tasks.values()
                    ],
                )
            if changes.attempts:
                db.executemany(
                    "INSERT OR REPLACE INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (a.job_id, a.index, a.number, a.node, _dumps(list(a.cpu_ids)), a.dispatched_at,
                         a.started_at, a.ended_at, _dumps(a.exit) if a.exit is not None else None,
                         _dumps(a.usage) if a.usage is not None else None,
                         _dumps(a.cleanup) if a.cleanup is not None else None,
                         _dumps(a.gres) if a.gres else None)
                        for a in changes.attempts.values()
                    ],
                )
            for (job_id, index, number), steps in changes.given_up.items():
                row = db.execute("SELECT cleanup FROM attempts WHERE job_id=? AND idx=? AND number=?",
                                 (job_id, index, number)).fetchone()
                if row is not None:
                    cleanup = with_given_up(json.loads(row[0]) if row[0] else None, steps)
                    db.execute("UPDATE attempts SET cleanup=? WHERE job_id=? AND idx=? AND number=?",
                               (_dumps(cleanup), job_id, index, number))
            if changes.nodes:
                db.executemany(
                    "INSERT OR REPLACE INTO nodes (name, cpus, memory_mib, state, registered_at, last_seen, reason, "
                    "drain, gres, features) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (n.name, n.cpus, n.memory_mib, n.state.value, n.registered_at, n.last_seen, n.reason, n.drain,
                         _dumps(hello_form(n.devices)) if n.devices else None,
                         _dumps(sorted(n.features)) if n.features else None)
                        for n in changes.nodes.values()
                    ],
                )
            for name, queue in changes.queues.items():
                if queue is None:
                    db.execute("DELETE FROM queues WHERE name=?", (name,))
                else:
                    db.execute("INSERT OR REPLACE INTO queues (name, starting, accepting, reason, settings, created_by, "
                               "changed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                               (name, int(queue.starting), int(queue.accepting), queue.reason,
                                _dumps(dict(queue.settings)), queue.created_by, queue.changed_at))
            first_seq = self._last_seq + 1
            if changes.events:
                db.executemany(
                    "INSERT INTO events (seq, time, job_id, idx, attempt, kind, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        (first_seq + n, e.time, e.job_id, e.index, e.attempt, e.kind, _dumps(e.detail))
                        for n, e in enumerate(changes.events)
                    ],
                )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # a failed COMMIT may have rolled back already
                db.execute("ROLLBACK")
            raise
        for n, event in enumerate(changes.events):
            event.seq = first_seq + n
        self._last_seq += len(changes.events)

    # -- reading ---------------------------------------------------------------------------

    @translated
    def load_working_set(self) -> WorkingSet:
        jobs = {
            row[0]: job_from_row(row)
            for row in self.db.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE ended_at IS NULL")
        }
        attempts: dict[tuple[int, int, int], Attempt] = {}
        for job in jobs.values():
            job.tasks = tasks_of(self.db, job.id)
            for task in job.tasks.values():
                if task.attempt:
                    row = self.db.execute(
                        "SELECT * FROM attempts WHERE job_id=? AND idx=? AND number=?",
                        (job.id, task.index, task.attempt),
                    ).fetchone()
                    if row is not None:
                        attempt = attempt_from_row(row)
                        attempts[attempt.job_id, attempt.index, attempt.number] = attempt
        nodes = self._nodes()
        queues = self.load_queues()
        next_id = (self.db.execute("SELECT MAX(id) FROM jobs").fetchone()[0] or 0) + 1
        return WorkingSet(jobs, attempts, nodes, next_id, queues)

    @translated
    def load_nodes(self) -> dict[str, Node]:
        return self._nodes()

    @translated
    def load_queues(self) -> dict[str, QueueRecord]:
        return {
            row[0]: QueueRecord(row[0], bool(row[1]), bool(row[2]), row[3], json.loads(row[4]) if row[4] else {},
                                row[5], row[6])
            for row in self.db.execute(
                "SELECT name, starting, accepting, reason, settings, created_by, changed_at FROM queues")
        }

    def _nodes(self) -> dict[str, Node]:
        return {
            row[0]: Node(row[0], row[1], row[2], NodeState(row[3]), row[4], row[5], row[6], row[7],
                         devices=devices_from_hello(json.loads(row[8])) if row[8] else (),
                         features=frozenset(json.loads(row[9])) if row[9] else frozenset())
            for row in self.db.execute(
                "SELECT name, cpus, memory_mib, state, registered_at, last_seen, reason, drain, gres, features FROM nodes")
        }

    @translated
    def load_job(self, job_id: int) -> Job | None:
        row = self.db.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id=?", (job_id,)).fetchone()
        if row is None:
            return None
        job = job_from_row(row)
        job.tasks = tasks_of(self.db, job_id)
        return job

    @translated
    def ended_job_states(self, job_ids: Sequence[int]) -> dict[int, str]:
        found: dict[int, str] = {}
        for job_id in job_ids:
            row = self.db.execute(
                "SELECT state FROM jobs WHERE id=? AND ended_at IS NOT NULL", (job_id,)
            ).fetchone()
            if row is not None:
                found[job_id] = row[0]
        return found

    @translated
    def list_ended_jobs(self, query: JobFilter) -> list[Job]:
        sql = f"SELECT {JOB_COLUMNS} FROM jobs WHERE ended_at IS NOT NULL"
        args: list[Any] = []
        if query.owner:
            sql += " AND owner=?"
            args.append(query.owner)
        if query.name:
            sql += " AND name=?"
            args.append(query.name)
        if query.states:
            sql += f" AND state IN ({', '.join('?' * len(query.states))})"
            args.extend(query.states)
        if query.ended_since is not None:
            sql += " AND ended_at >= ?"
            args.append(query.ended_since)
        if query.before is not None:
            sql += " AND id < ?"
            args.append(query.before)
        sql += " ORDER BY id DESC LIMIT ?"
        args.append(query.limit)
        jobs = [job_from_row(row) for row in self.db.execute(sql, args)]
        for job in jobs:
            job.tasks = tasks_of(self.db, job.id)
        return list(reversed(jobs))

    @translated
    def attempts_of(self, job_id: int) -> list[Attempt]:
        return [
            attempt_from_row(row)
            for row in self.db.execute(
                "SELECT * FROM attempts WHERE job_id=? ORDER BY idx, number", (job_id,)
            )
        ]

    @translated
    def events_of(self, job_id: int | None, after_seq: int, limit: int) -> list[tuple[int, EventRecord]]:
        return events_of(self.db, job_id, after_seq, limit)

    def reader(self) -> SqliteReader:
        """A read-only connection to the same file, for the calling thread alone."""
        from drover.store.sqlite_reader import SqliteReader

        return SqliteReader(self.path)

    # -- cluster membership: join tokens and the node certificates issued at join -----------------

    @translated
    def add_join_token(self, token: TokenRecord) -> None:
        with _transaction(self.db):
            self.db.execute("INSERT INTO join_tokens VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (token.id, token.secret_hash, token.created_at, token.created_by, token.expires_at,
                             token.uses_left, token.revoked_at))

    @translated
    def join_tokens(self) -> list[TokenRecord]:
        return [TokenRecord(*row) for row in self.db.execute("SELECT * FROM join_tokens ORDER BY created_at")]

    @translated
    def join_token(self, token_id: str) -> TokenRecord | None:
        row = self.db.execute("SELECT * FROM join_tokens WHERE id=?", (token_id,)).fetchone()
        return TokenRecord(*row) if row is not None else None

    @translated
    def revoke_join_token(self, token_id: str, now: float) -> bool:
        """False if there is no such token; revoking one twice keeps the first time."""
        with _transaction(self.db):
            found = self.db.execute("UPDATE join_tokens SET revoked_at=COALESCE(revoked_at, ?) WHERE id=?",
                                    (now, token_id)).rowcount
        return bool(found)

    @translated
    def node_joined(self, token_id: str, node: str, serial: str, issued_at: float, expires_at: float) -> bool:
        """One transaction: take one use of the token (False, and nothing changed, if it has none
        left), revoke the node's older certificates, and record the new one."""
        db = self.db
        with _transaction(db):
            taken = db.execute("UPDATE join_tokens SET uses_left = uses_left - 1 "
                               "WHERE id=? AND uses_left > 0 AND revoked_at IS NULL", (token_id,)).rowcount
            if taken:
                db.execute("UPDATE node_certificates SET revoked_at=? WHERE node=? AND revoked_at IS NULL",
                           (issued_at, node))
                db.execute("INSERT INTO node_certificates VALUES (?, ?, ?, ?, ?, NULL)",
                           (serial, node, issued_at, expires_at, token_id))
        return bool(taken)

    @translated
    def node_certificate_revoked(self, serial: str) -> bool:
        """Whether the controller revoked this certificate (one it never issued is not revoked:
        the admin's own CA may have issued it)."""
        row = self.db.execute("SELECT revoked_at FROM node_certificates WHERE serial=?", (serial,)).fetchone()
        return row is not None and row[0] is not None

    @translated
    def node_left(self, node: str, now: float) -> None:
        """The node is forgotten: its row goes and its certificates are revoked, in one transaction."""
        with _transaction(self.db):
            self.db.execute("UPDATE node_certificates SET revoked_at=? WHERE node=? AND revoked_at IS NULL", (now, node))
            self.db.execute("DELETE FROM nodes WHERE name=?", (node,))

    @translated
    def purge_ended(self, before: float, limit: int) -> list[int]:
        """Forget at most `limit` jobs that ended before `before`, the oldest first, with their
        tasks, attempts (and so their accounting rows), and events; and as many events of no
        job from before then. One transaction; returns the jobs forgotten. The newest event is
        never removed: the next event's number follows it, so readers that follow the log by
        number miss nothing."""
        with _transaction(self.db):
            ids = [row[0] for row in self.db.execute(
                "SELECT id FROM jobs WHERE ended_at IS NOT NULL AND ended_at < ? ORDER BY ended_at LIMIT ?",
                (before, limit))]
            newest = self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]
            for part in range(0, len(ids), 500):  # SQLite's bound on a statement's parameters
                chunk = ids[part:part + 500]
                marks = ", ".join("?" * len(chunk))
                self.db.execute(f"DELETE FROM events WHERE job_id IN ({marks}) AND seq < ?", (*chunk, newest))
                self.db.execute(f"DELETE FROM attempts WHERE job_id IN ({marks})", chunk)
                self.db.execute(f"DELETE FROM tasks WHERE job_id IN ({marks})", chunk)
                self.db.execute(f"DELETE FROM jobs WHERE id IN ({marks})", chunk)
            self.db.execute("DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE job_id IS NULL AND time < ? "
                            "AND seq < ? ORDER BY seq LIMIT ?)", (before, newest, limit))
        return ids


def tasks_of(db: sqlite3.Connection, job_id: int) -> dict[int, Task]:
    return {
        row[1]: Task(row[0], row[1], JobState(row[2]), row[3], row[4], bool(row[5]), row[6], bool(row[7]),
                     bool(row[8]))
        for row in db.execute("SELECT * FROM tasks WHERE job_id=? ORDER BY idx", (job_id,))
    }


def events_of(db: sqlite3.Connection, job_id: int | None, after_seq: int, limit: int) -> list[tuple[int, EventRecord]]:
    """Events after sequence number `after_seq` (of one job, or all), oldest first."""
    if job_id is None:
        cursor = db.execute("SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (after_seq, limit))
    else:
        cursor = db.execute(
            "SELECT * FROM events WHERE job_id=? AND seq > ? ORDER BY seq LIMIT ?", (job_id, after_seq, limit)
        )
    return [
        (row[0], EventRecord(row[1], row[5], row[2], row[3], row[4], json.loads(row[6]), row[0]))
        for row in cursor
    ]


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any failure (the connection autocommits
    otherwise)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _job_row(job: Job) -> tuple[Any, ...]:
    return (
        job.id, job.owner, job.name, job.submitted_at, job.priority, job.resources.cpus,
        job.resources.memory_mib, _dumps([list(r) for r in job.indices.ranges]), int(job.is_array),
        job.max_running, "[]", _spec_text(job.spec), job.fresh_from,  # after_ok: superseded (migration 0011)
        job.fresh_state.value, _dumps(sorted(job.fresh_skip)), job.ended_at,
        job.state.value if job.state else None, job.end_reason, job.event_log_node,
        _dependencies_text(job.dependencies), job.begin_at,
    )


def job_from_row(row: Sequence[Any]) -> Job:
    return Job(
        id=row[0], owner=row[1], name=row[2], submitted_at=row[3], priority=row[4],
        resources=Resources(row[5], row[6]),
        indices=TaskIndices(tuple(tuple(r) for r in json.loads(row[7]))),
        is_array=bool(row[8]), max_running=row[9], dependencies=_dependencies(row[19]),
        spec=json.loads(row[11]), fresh_from=row[12], fresh_state=JobState(row[13]),
        fresh_skip=set(json.loads(row[14])), ended_at=row[15],
        state=JobState(row[16]) if row[16] else None, end_reason=row[17], event_log_node=row[18],
        begin_at=row[20],
    )


def _dependencies_text(dependencies: Dependencies) -> str | None:
    if not dependencies:
        return None
    return _dumps({"any": dependencies.any, "on": [d.to_json() for d in dependencies.on]})


def _dependencies(text: str | None) -> Dependencies:
    if not text:
        return Dependencies()
    record = json.loads(text)
    return Dependencies(tuple(Dependency.from_json(d) for d in record["on"]), bool(record.get("any")))


def attempt_from_row(row: Sequence[Any]) -> Attempt:
    return Attempt(
        job_id=row[0], index=row[1], number=row[2], node=row[3], cpu_ids=tuple(json.loads(row[4])),
        dispatched_at=row[5], started_at=row[6], ended_at=row[7],
        exit=json.loads(row[8]) if row[8] else None, usage=json.loads(row[9]) if row[9] else None,
        cleanup=json.loads(row[10]) if row[10] else None,
        gres={name: tuple(indices) for name, indices in json.loads(row[11]).items()} if len(row) > 11 and row[11] else {},
    )
