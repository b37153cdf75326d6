"""The store's writes and reads, written once for every backend: SqliteStore and PostgresStore
give it a connection (`self.db`, which takes `?` placeholders) and their dialect. One
transaction per `commit(changes)`, committed before the caller is answered."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from drover.core.gres import devices_from_hello, hello_form
from drover.core.job import (
    Attempt,
    Job,
    JobPayload,
    Task,
    payload_bytes,
    split_payload,
    with_given_up,
)
from drover.core.membership import TokenRecord
from drover.core.node import Node
from drover.core.node_state import NodeState
from drover.core.queues import QueueRecord
from drover.records import GivenUpStep
from drover.store.allocation_rows import AllocationRows
from drover.store.base import Changes, EventRecord, JobFilter, SubmissionKey, WorkingSet
from drover.store.dialect import Dialect
from drover.store.faults import StoreFault, translated
from drover.store.rows import (
    ATTEMPT_COLUMNS,
    EVENT_COLUMNS,
    JOB_COLUMNS,
    PAYLOAD_COLUMNS,
    TASK_COLUMNS,
    attempt_from_row,
    attempt_row,
    dumps,
    event_from_row,
    job_from_row,
    job_row,
    payload_from_row,
    payload_row,
    spec_text,
    task_row,
    tasks_from_rows,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.store.sql_reader import SqlReader

NODE_COLUMNS = ("name", "cpus", "memory_mib", "state", "registered_at", "last_seen", "reason", "drain", "gres",
                "features", "queue_errors", "suspended_queues")
QUEUE_COLUMNS = ("name", "starting", "accepting", "reason", "settings", "created_by", "changed_at")
SUBMISSION_COLUMNS = ("owner", "request_key", "job_ids", "submitted_at")
IDS_PER_STATEMENT = 500  # well below SQLite's bound on a statement's parameters
KEYS_PER_STATEMENT = IDS_PER_STATEMENT // 3  # an attempt's key is three parameters


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def __iter__(self) -> Iterator[Any]: ...


class Db(Protocol):
    """A connection in autocommit mode that takes `?` placeholders (sqlite3's own, or postgres.py's
    translating wrapper): transactions are begun and ended by statements."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Any, /) -> Any: ...


class SqlStore(AllocationRows):
    db: Db
    dialect: Dialect
    path: str  # what failures name: the file, or the server's URL without its password
    needs_reopen: bool
    schema_version: int
    # Set while an integrity check (store/integrity.py) finds the store damaged: what every write
    # is refused with, so that nothing more is written over damage and nothing is acknowledged.
    damaged: str | None = None

    def __init__(self) -> None:
        self._last_seq = self._newest_seq()

    def _newest_seq(self) -> int:
        return int(self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])

    # -- backend hooks ------------------------------------------------------------------------

    def fault(self, error: Exception) -> StoreFault | None:
        raise NotImplementedError

    def reopen(self) -> None:
        raise NotImplementedError

    def _rollback(self) -> None:
        """Undo the open transaction, if the connection still has one."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def reader(self) -> SqlReader:
        """A read-only view of the same store for the calling thread alone."""
        raise NotImplementedError

    def _batched(self) -> contextlib.AbstractContextManager[object]:
        """Around a whole transaction: how a backend sends its statements together (PostgreSQL's
        pipeline: one round trip from BEGIN to COMMIT). SQLite runs in this process: nothing."""
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def transaction(self, batched: bool = False) -> Iterator[Db]:
        """One write transaction on the store's connection, rolled back on any failure: for the
        store's own writes, for `drover store copy`, and for tests that write rows directly.
        `batched`: its statements are sent together (`_batched`), for a body that reads no
        row count (a batched statement's result comes only when the batch is sent); a
        statement's failure may then show only at the end, which the rollback covers too."""
        if self.damaged is not None:
            raise StoreFault(self.damaged)
        try:
            with self._batched() if batched else contextlib.nullcontext():
                self.db.execute(self.dialect.begin_write)
                yield self.db
                self.db.execute("COMMIT")
        except BaseException:
            self._rollback()
            raise

    # -- writing ---------------------------------------------------------------------------

    @translated
    def commit(self, changes: Changes) -> None:
        first_seq = self._last_seq + 1
        with self.transaction(batched=True) as db:
            self._write(db, changes, first_seq)
        for n, event in enumerate(changes.events):
            event.seq = first_seq + n
        self._last_seq += len(changes.events)

    def _write(self, db: Db, changes: Changes, first_seq: int) -> None:
        upsert = self.dialect.upsert
        if changes.new_jobs:
            db.executemany(f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES ({', '.join('?' * 22)})",
                           [job_row(job) for job in changes.new_jobs])
        if changes.payloads:
            db.executemany(f"INSERT INTO job_payloads ({PAYLOAD_COLUMNS}) VALUES (?, ?, ?, ?)",
                           [payload_row(job_id, payload) for job_id, payload in changes.payloads.items()])
        if changes.jobs:
            db.executemany(
                "UPDATE jobs SET priority=?, fresh_from=?, fresh_state=?, fresh_skip=?, ended_at=?, "
                "state=?, end_reason=? WHERE id=?",
                [
                    (job.priority, job.fresh_from, job.fresh_state.value, dumps(sorted(job.fresh_skip)),
                     job.ended_at, job.state.value if job.state else None, job.end_reason, job.id)
                    for job in changes.jobs.values()
                ],
            )
        if changes.specs:
            _move_payloads_out_of_specs(db, sorted(changes.specs))
            db.executemany("UPDATE jobs SET spec=? WHERE id=?",
                           [(spec_text(changes.jobs[job_id].spec), job_id) for job_id in changes.specs])
        if changes.tasks:
            db.executemany(upsert("tasks", TASK_COLUMNS, ("job_id", "idx")),
                           [task_row(t) for t in changes.tasks.values()])
        if changes.attempts:
            db.executemany(upsert("attempts", ATTEMPT_COLUMNS, ("job_id", "idx", "number")),
                           [attempt_row(a) for a in changes.attempts.values()])
        if changes.given_up:
            _add_given_up(db, changes.given_up)
        if changes.nodes:
            db.executemany(
                upsert("nodes", NODE_COLUMNS, ("name",)),
                [
                    (n.name, n.cpus, n.memory_mib, n.state.value, n.registered_at, n.last_seen, n.reason, n.drain,
                     dumps(hello_form(n.devices)) if n.devices else None,
                     dumps(sorted(n.features)) if n.features else None,
                     dumps(n.queue_errors) if n.queue_errors else None,
                     dumps(n.suspended_queues) if n.suspended_queues else None)
                    for n in changes.nodes.values()
                ],
            )
        for name, queue in changes.queues.items():
            if queue is None:
                db.execute("DELETE FROM queues WHERE name=?", (name,))
            else:
                db.execute(upsert("queues", QUEUE_COLUMNS, ("name",)),
                           (name, int(queue.starting), int(queue.accepting), queue.reason,
                            dumps(dict(queue.settings)), queue.created_by, queue.changed_at))
        if changes.events:
            db.executemany(
                f"INSERT INTO events ({EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(first_seq + n, e.time, e.job_id, e.index, e.attempt, e.kind, dumps(e.detail))
                 for n, e in enumerate(changes.events)],
            )
        if changes.submissions:
            # A key seen again once it was no longer remembered names the newer submission.
            db.executemany(upsert("submission_keys", SUBMISSION_COLUMNS, ("owner", "request_key")),
                           [(s.owner, s.key, dumps(list(s.job_ids)), s.submitted_at) for s in changes.submissions])

    # -- reading ---------------------------------------------------------------------------

    @translated
    def load_working_set(self) -> WorkingSet:
        jobs = {row[0]: job_from_row(row)
                for row in self.db.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE ended_at IS NULL", ())}
        attempts: dict[tuple[int, int, int], Attempt] = {}
        for job in jobs.values():
            job.tasks = tasks_of(self.db, job.id)
            for task in job.tasks.values():
                if task.attempt:
                    row = self.db.execute(
                        f"SELECT {', '.join(ATTEMPT_COLUMNS)} FROM attempts WHERE job_id=? AND idx=? AND number=?",
                        (job.id, task.index, task.attempt),
                    ).fetchone()
                    if row is not None:
                        attempt = attempt_from_row(row)
                        attempts[attempt.job_id, attempt.index, attempt.number] = attempt
        nodes = self._nodes()
        queues = self.load_queues()
        next_id = (self.db.execute("SELECT MAX(id) FROM jobs", ()).fetchone()[0] or 0) + 1
        return WorkingSet(jobs, attempts, nodes, next_id, queues)

    @translated
    def recent_submissions(self, limit: int) -> list[SubmissionKey]:
        rows = self.db.execute(f"SELECT {', '.join(SUBMISSION_COLUMNS)} FROM submission_keys "
                               "ORDER BY submitted_at DESC, owner DESC, request_key DESC LIMIT ?", (limit,))
        return [SubmissionKey(row[0], row[1], tuple(json.loads(row[2])), row[3]) for row in reversed(list(rows))]

    @translated
    def prune_submissions(self, keep: int) -> int:
        """One statement: the index on submitted_at finds the oldest kept key, and what is older goes."""
        with self.transaction() as db:
            return int(db.execute(
                "DELETE FROM submission_keys WHERE submitted_at < (SELECT submitted_at FROM submission_keys "
                "ORDER BY submitted_at DESC LIMIT 1 OFFSET ?)", (max(keep, 1) - 1,)).rowcount)

    @translated
    def load_nodes(self) -> dict[str, Node]:
        return self._nodes()

    @translated
    def load_queues(self) -> dict[str, QueueRecord]:
        return {
            row[0]: QueueRecord(row[0], bool(row[1]), bool(row[2]), row[3], json.loads(row[4]) if row[4] else {},
                                row[5], row[6])
            for row in self.db.execute(f"SELECT {', '.join(QUEUE_COLUMNS)} FROM queues", ())
        }

    def _nodes(self) -> dict[str, Node]:
        return {
            row[0]: Node(row[0], row[1], row[2], NodeState(row[3]), row[4], row[5], row[6], row[7],
                         devices=devices_from_hello(json.loads(row[8])) if row[8] else (),
                         features=frozenset(json.loads(row[9])) if row[9] else frozenset(),
                         queue_errors=json.loads(row[10]) if row[10] else {},
                         suspended_queues=json.loads(row[11]) if row[11] else {})
            for row in self.db.execute(f"SELECT {', '.join(NODE_COLUMNS)} FROM nodes", ())
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
            row = self.db.execute("SELECT state FROM jobs WHERE id=? AND ended_at IS NOT NULL", (job_id,)).fetchone()
            if row is not None:
                found[job_id] = row[0]
        return found

    @translated
    def job_payloads(self, job_ids: Sequence[int]) -> dict[int, JobPayload]:
        return job_payloads(self.db, job_ids)

    @translated
    def list_ended_jobs(self, query: JobFilter) -> list[Job]:
        where, args = ended_jobs_where(query)
        jobs = [job_from_row(row) for row in self.db.execute(
            f"SELECT {JOB_COLUMNS} FROM jobs WHERE {where} ORDER BY id DESC LIMIT ?", [*args, query.limit])]
        for job in jobs:
            job.tasks = tasks_of(self.db, job.id)
        return list(reversed(jobs))

    @translated
    def attempts_of(self, job_id: int) -> list[Attempt]:
        return attempts_of(self.db, job_id)

    @translated
    def attempt_nodes(self, keys: Sequence[tuple[int, int, int]]) -> dict[tuple[int, int, int], str]:
        found: dict[tuple[int, int, int], str] = {}
        for part in range(0, len(keys), KEYS_PER_STATEMENT):
            chunk = keys[part:part + KEYS_PER_STATEMENT]
            found.update(((job_id, index, number), node) for job_id, index, number, node in self.db.execute(
                "SELECT job_id, idx, number, node FROM attempts WHERE (job_id, idx, number) IN "
                f"(VALUES {', '.join(['(?, ?, ?)'] * len(chunk))})", [value for key in chunk for value in key]))
        return found

    @translated
    def events_of(self, job_id: int | None, after_seq: int, limit: int) -> list[tuple[int, EventRecord]]:
        return events_of(self.db, job_id, after_seq, limit)

    # -- cluster membership: join tokens and the node certificates issued at join -----------------

    @translated
    def add_join_token(self, token: TokenRecord) -> None:
        with self.transaction() as db:
            db.execute("INSERT INTO join_tokens VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (token.id, token.secret_hash, token.created_at, token.created_by, token.expires_at,
                        token.uses_left, token.revoked_at))

    @translated
    def join_tokens(self) -> list[TokenRecord]:
        return [TokenRecord(*row) for row in self.db.execute("SELECT * FROM join_tokens ORDER BY created_at", ())]

    @translated
    def join_token(self, token_id: str) -> TokenRecord | None:
        row = self.db.execute("SELECT * FROM join_tokens WHERE id=?", (token_id,)).fetchone()
        return TokenRecord(*row) if row is not None else None

    @translated
    def revoke_join_token(self, token_id: str, now: float) -> bool:
        """False if there is no such token; revoking one twice keeps the first time."""
        with self.transaction() as db:
            found = db.execute("UPDATE join_tokens SET revoked_at=COALESCE(revoked_at, ?) WHERE id=?",
                               (now, token_id)).rowcount
        return bool(found)

    @translated
    def node_joined(self, token_id: str, node: str, serial: str, issued_at: float, expires_at: float) -> bool:
        """One transaction: take one use of the token (False, and nothing changed, if it has none
        left), revoke the node's older certificates, and record the new one."""
        with self.transaction() as db:
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
        with self.transaction() as db:
            db.execute("UPDATE node_certificates SET revoked_at=? WHERE node=? AND revoked_at IS NULL", (now, node))
            db.execute("DELETE FROM nodes WHERE name=?", (node,))

    @translated
    def purge_ended(self, before: float, limit: int) -> list[int]:
        """Forget at most `limit` jobs that ended before `before`, the oldest first, with their
        tasks, attempts (and so their accounting rows), and events; and as many events of no
        job from before then. One transaction; returns the jobs forgotten. The newest event is
        never removed: the next event's number follows it, so readers that follow the log by
        number miss nothing."""
        with self.transaction() as db:
            ids = [row[0] for row in db.execute(
                "SELECT id FROM jobs WHERE ended_at IS NOT NULL AND ended_at < ? ORDER BY ended_at LIMIT ?",
                (before, limit))]
            newest = db.execute("SELECT COALESCE(MAX(seq), 0) FROM events", ()).fetchone()[0]
            for part in range(0, len(ids), IDS_PER_STATEMENT):
                chunk = ids[part:part + IDS_PER_STATEMENT]
                marks = ", ".join("?" * len(chunk))
                db.execute(f"DELETE FROM events WHERE job_id IN ({marks}) AND seq < ?", (*chunk, newest))
                db.execute(f"DELETE FROM attempts WHERE job_id IN ({marks})", chunk)
                db.execute(f"DELETE FROM tasks WHERE job_id IN ({marks})", chunk)
                db.execute(f"DELETE FROM job_payloads WHERE job_id IN ({marks})", chunk)
                db.execute(f"DELETE FROM jobs WHERE id IN ({marks})", chunk)
            db.execute("DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE job_id IS NULL AND time < ? "
                       "AND seq < ? ORDER BY seq LIMIT ?)", (before, newest, limit))
        return ids


def ended_jobs_where(query: JobFilter) -> tuple[str, list[Any]]:
    """The WHERE clause (on `jobs`) that selects the ended jobs `query` asks for, and its arguments:
    what the listing indexes of migration 0005 answer."""
    where = ["ended_at IS NOT NULL"]
    args: list[Any] = []
    for column, value in (("owner", query.owner), ("name", query.name)):
        if value:
            where.append(f"{column}=?")
            args.append(value)
    if query.states:  # an ended job matches by its final state
        where.append(f"state IN ({', '.join('?' * len(query.states))})")
        args.extend(query.states)
    if query.ended_since is not None:
        where.append("ended_at >= ?")
        args.append(query.ended_since)
    if query.before is not None:
        where.append("id < ?")
        args.append(query.before)
    return " AND ".join(where), args


def job_payloads(db: Db, job_ids: Sequence[int]) -> dict[int, JobPayload]:
    """The payloads of `job_ids`, a statement for IDS_PER_STATEMENT of them; a job stored by an
    older Drover has its payload in its spec, read from there."""
    wanted = sorted(set(job_ids))
    found: dict[int, JobPayload] = {}
    for part in range(0, len(wanted), IDS_PER_STATEMENT):
        chunk = wanted[part:part + IDS_PER_STATEMENT]
        for row in db.execute(f"SELECT {PAYLOAD_COLUMNS} FROM job_payloads "
                              f"WHERE job_id IN ({', '.join('?' * len(chunk))})", chunk):
            found[row[0]] = payload_from_row(row)
    older = [job_id for job_id in wanted if job_id not in found]
    for part in range(0, len(older), IDS_PER_STATEMENT):
        chunk = older[part:part + IDS_PER_STATEMENT]
        for job_id, text in db.execute(f"SELECT id, spec FROM jobs WHERE id IN ({', '.join('?' * len(chunk))}) "
                                       "AND payload_bytes IS NULL", chunk):
            payload = split_payload(json.loads(text))
            if payload is not None:
                found[job_id] = payload
    return found


def _add_given_up(db: Db, given_up: dict[tuple[int, int, int], list[GivenUpStep]]) -> None:
    """Add the steps given up to the stored attempts' cleanup records: the records read in one
    statement for KEYS_PER_STATEMENT attempts, and written back in one, however many attempts a
    turn's reports name (a node whose mail or spool removal fails gives up that step for every
    attempt it ends, after their jobs ended)."""
    keys = list(given_up)
    stored: list[tuple[int, int, int, str | None]] = []
    for part in range(0, len(keys), KEYS_PER_STATEMENT):
        chunk = keys[part:part + KEYS_PER_STATEMENT]
        stored += db.execute(
            "SELECT job_id, idx, number, cleanup FROM attempts WHERE (job_id, idx, number) IN "
            f"(VALUES {', '.join(['(?, ?, ?)'] * len(chunk))})", [value for key in chunk for value in key])
    if stored:
        db.executemany("UPDATE attempts SET cleanup=? WHERE job_id=? AND idx=? AND number=?", [
            (dumps(with_given_up(json.loads(cleanup) if cleanup else None, given_up[job_id, index, number])),
             job_id, index, number)
            for job_id, index, number, cleanup in stored])


def _move_payloads_out_of_specs(db: Db, job_ids: Sequence[int]) -> None:
    """Before the specs of these jobs are written again (from the working set, which holds no
    payload): the payload of one stored by an older Drover, kept in its spec, is moved to its
    own row first, so that it is not lost."""
    for part in range(0, len(job_ids), IDS_PER_STATEMENT):
        chunk = job_ids[part:part + IDS_PER_STATEMENT]
        for job_id, text in list(db.execute(f"SELECT id, spec FROM jobs WHERE id IN ({', '.join('?' * len(chunk))}) "
                                            "AND payload_bytes IS NULL", chunk)):
            payload = split_payload(json.loads(text))
            if payload is not None:
                db.execute(f"INSERT INTO job_payloads ({PAYLOAD_COLUMNS}) VALUES (?, ?, ?, ?)",
                           payload_row(job_id, payload))
            db.execute("UPDATE jobs SET payload_bytes=? WHERE id=?",
                       (payload_bytes(payload) if payload is not None else 0, job_id))


def tasks_of(db: Db, job_id: int) -> dict[int, Task]:
    return tasks_from_rows(db.execute(f"SELECT {', '.join(TASK_COLUMNS)} FROM tasks WHERE job_id=? ORDER BY idx",
                                      (job_id,)))


def attempts_of(db: Db, job_id: int) -> list[Attempt]:
    return [attempt_from_row(row) for row in db.execute(
        f"SELECT {', '.join(ATTEMPT_COLUMNS)} FROM attempts WHERE job_id=? ORDER BY idx, number", (job_id,))]


def events_of(db: Db, job_id: int | None, after_seq: int, limit: int) -> list[tuple[int, EventRecord]]:
    """Events after sequence number `after_seq` (of one job, or all), oldest first."""
    if job_id is None:
        cursor = db.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
                            (after_seq, limit))
    else:
        cursor = db.execute(f"SELECT {EVENT_COLUMNS} FROM events WHERE job_id=? AND seq > ? ORDER BY seq LIMIT ?",
                            (job_id, after_seq, limit))
    return [event_from_row(row) for row in cursor]
