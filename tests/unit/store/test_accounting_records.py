"""The accounting records on a temporary store (SQLite and PostgreSQL) with known attempts: each filter selects
exactly its records, the SQL summaries give the figures core/accounting.py defines, records
follow their task's state and go with their attempt, and the migration records the attempts
that ended before it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from drover.core.accounting import summarise
from drover.store.base import Changes, HistoryFilter, StoreReader, open_store
from drover.store.database import Database as RawDatabase
from drover.store.sql_store import Db, SqlStore

DAY = 86400.0
T0 = 1_790_000_000.0
# job id → (owner, queue, name, cpus, memory MiB, final task state, [(node, started, ended, cpu s, rss KiB)...])
JOBS = {
    1: ("alice", "default", "align-1", 1, 1024, "completed", [("n1", T0 + 10, T0 + 110, 50.0, 524288)]),
    2: ("alice", "q2", "align-2", 2, 2048, "failed", [("n2", T0 + DAY, T0 + DAY + 100, 200.0, 1048576)]),
    3: ("bob", "q2", "train", 4, 0, "completed", [("n1", T0 + 20, T0 + 60, 40.0, 1000),
                                                  ("n2", T0 + 100, T0 + 500, 1600.0, 2000)]),
    4: ("carol", "default", "plot", 1, 512, "timeout", [("n3", T0 + 3 * DAY, T0 + 3 * DAY + 3600, 10.0, 100)]),
}


def write(db: Db, job_id: int) -> None:
    owner, queue, name, cpus, memory, state, attempts = JOBS[job_id]
    spec = json.dumps({"queue": queue, "time_limit_s": 7200, "script": "true\n"})
    db.execute("INSERT INTO jobs (id, owner, name, submitted_at, priority, cpus, memory_mib, indices, is_array, "
               "after_ok, spec, ended_at, state) VALUES (?, ?, ?, ?, 0, ?, ?, '[[0,0,1]]', 0, '[]', ?, ?, ?)",
               (job_id, owner, name, T0, cpus, memory, spec, attempts[-1][2], state))
    db.execute("INSERT INTO tasks (job_id, idx, state, state_since, attempt) VALUES (?, 0, ?, ?, ?)",
               (job_id, state, attempts[-1][2], len(attempts)))
    for number, (node, started, ended, cpu, rss) in enumerate(attempts, 1):
        usage = {"user_cpu_s": cpu * 0.75, "sys_cpu_s": cpu * 0.25, "max_rss_kib": rss, "wall_s": ended - started}
        exit_record = {"exit_code": 0 if state == "completed" else 1, "signal": None, "failure": None,
                       "timed_out": state == "timeout", "terminated": False, "out_of_memory": False}
        db.execute("INSERT INTO attempts (job_id, idx, number, node, cpu_ids, dispatched_at, started_at, ended_at, "
                   "exit, usage) VALUES (?, 0, ?, ?, '[0]', ?, ?, ?, ?, ?)",
                   (job_id, number, node, started - 1, started, ended, json.dumps(exit_record), json.dumps(usage)))


@pytest.fixture
def store(store_url: str) -> Iterator[tuple[SqlStore, StoreReader]]:
    made = open_store(store_url)
    assert isinstance(made, SqlStore)
    with made.transaction() as db:
        for job_id in JOBS:
            write(db, job_id)
    reader = made.reader()
    yield made, reader
    reader.close()
    made.close()


def keys(reader: StoreReader, **where: object) -> list[tuple[int, int]]:
    return [(r.job_id, r.attempt) for r in reader.history(None, 100, None, where=HistoryFilter(**where))]  # type: ignore[arg-type]


def test_each_filter_selects_exactly_its_records(store: tuple[SqlStore, StoreReader]) -> None:
    _, reader = store
    assert keys(reader) == [(4, 1), (2, 1), (3, 2), (1, 1), (3, 1)]  # newest end first
    assert keys(reader, owner="alice") == [(2, 1), (1, 1)]
    assert keys(reader, queue="q2") == [(2, 1), (3, 2), (3, 1)]
    assert keys(reader, node="n1") == [(1, 1), (3, 1)]
    assert keys(reader, states=("failed", "timeout")) == [(4, 1), (2, 1)]
    assert keys(reader, states=("requeued",)) == [(3, 1)]  # an earlier attempt of its task
    assert keys(reader, name="align-*") == [(2, 1), (1, 1)]
    assert keys(reader, name="ALIGN-*") == []  # globs are case-sensitive
    assert keys(reader, since=T0 + 110, until=T0 + DAY + 100) == [(3, 2), (1, 1)]  # until is exclusive
    assert keys(reader, owner="bob", queue="q2", node="n2") == [(3, 2)]
    assert keys(reader, job_id=3) == [(3, 2), (3, 1)]
    assert reader.history("alice", 100, T0 + DAY) == reader.history(None, 100, None, where=HistoryFilter(
        owner="alice", since=T0 + DAY))


def test_a_record_carries_what_was_asked_and_used(store: tuple[SqlStore, StoreReader]) -> None:
    _, reader = store
    (second, first) = reader.history(None, 100, None, where=HistoryFilter(job_id=3))
    assert (first.state, second.state) == ("requeued", "completed")
    assert (second.queue, second.cpus, second.memory_mib, second.time_limit_s) == ("q2", 4, 0, 7200)
    assert (first.eligible_at, second.eligible_at) == (T0, T0 + 60)  # submitted; then the first attempt's end
    assert second.usage is not None and second.usage["max_rss_kib"] == 2000


def test_summaries_in_sql_agree_with_their_definition(store: tuple[SqlStore, StoreReader]) -> None:
    _, reader = store
    for by in ("user", "queue", "node", "day"):
        for where in (HistoryFilter(), HistoryFilter(queue="q2"), HistoryFilter(since=T0 + 100)):
            from_sql = reader.history_summary(by, where)
            defined = summarise(reader.accounting_facts(where), by)
            assert [g.key for g in from_sql] == [g.key for g in defined], (by, where)
            for got, want in zip(from_sql, defined, strict=True):
                assert (got.jobs, got.attempts, got.wait_p50_s, got.wait_p90_s) == (
                    want.jobs, want.attempts, want.wait_p50_s, want.wait_p90_s), (by, where)
                assert got.cpu_hours == pytest.approx(want.cpu_hours) and got.wall_hours == pytest.approx(
                    want.wall_hours)
                for name in ("cpu_efficiency_p50", "memory_efficiency_p50"):
                    assert getattr(got, name) == pytest.approx(getattr(want, name)), (by, where, name)
    (alice,) = reader.history_summary("user", HistoryFilter(owner="alice"))
    assert (alice.jobs, alice.attempts, alice.cpu_hours) == (2, 2, pytest.approx(250 / 3600))
    assert alice.cpu_efficiency_p50 == pytest.approx(0.5)  # 50 s of 100 s, and 200 s of 2 CPUs × 100 s
    assert alice.memory_efficiency_p50 == pytest.approx(0.5)  # 512 MiB of 1 GiB, 1 GiB of 2 GiB
    (bob,) = reader.history_summary("user", HistoryFilter(owner="bob"))
    assert bob.memory_efficiency_p50 is None  # asked for no memory


def test_a_peak_not_known_is_in_no_memory_efficiency(store: tuple[SqlStore, StoreReader],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """No cgroup measured the attempt (a subreaper node) and its max RSS is 0, not known
    (accounting.md, Max RSS): its memory efficiency is not known either, not 0, in SQL as defined."""
    made, reader = store
    monkeypatch.setitem(JOBS, 5, ("alice", "default", "tiny", 1, 1024, "completed",
                                  [("n4", T0 + 200, T0 + 300, 50.0, 0)]))
    with made.transaction() as db:
        write(db, 5)
    (fact,) = reader.accounting_facts(HistoryFilter(job_id=5))
    assert fact.memory_efficiency is None
    for where in (HistoryFilter(owner="alice"), HistoryFilter(job_id=5)):
        from_sql, defined = reader.history_summary("user", where), summarise(reader.accounting_facts(where), "user")
        assert [g.memory_efficiency_p50 for g in from_sql] == [g.memory_efficiency_p50 for g in defined]
    (alice,) = reader.history_summary("user", HistoryFilter(owner="alice"))
    assert alice.memory_efficiency_p50 == pytest.approx(0.5)  # 512 MiB of 1 GiB, 1 GiB of 2 GiB; not 0
    (tiny,) = reader.history_summary("user", HistoryFilter(job_id=5))
    assert tiny.memory_efficiency_p50 is None


def test_a_record_follows_its_task_and_goes_with_its_attempt(store: tuple[SqlStore, StoreReader]) -> None:
    made, reader = store
    with made.transaction() as db:
        db.execute(made.dialect.upsert("tasks", ("job_id", "idx", "state", "state_since", "attempt"),
                                       ("job_id", "idx")), (1, 0, "cancelled", 0, 1))
    assert [r.state for r in reader.history(None, 10, None, where=HistoryFilter(job_id=1))] == ["cancelled"]
    with made.transaction() as db:
        db.execute("DELETE FROM attempts WHERE job_id = 4")
    assert keys(reader, owner="carol") == []


def test_a_record_follows_its_attempts_usage_rewritten_whole(store: tuple[SqlStore, StoreReader]) -> None:
    """A parallel job's tasks that end after its master add to its usage (controller/handlers/pe_usage.py):
    the store writes the attempt again whole, and its record counts the tasks."""
    made, reader = store
    (attempt,) = made.attempts_of(1)
    assert attempt.usage is not None
    attempt.usage = dict(attempt.usage, user_cpu_s=100.0, cgroup_cpu_s=130.0,  # type: ignore[typeddict-item]
                         cgroup_peak_memory_bytes=1 << 31)
    changes = Changes()
    changes.attempt(attempt)
    made.commit(changes)
    (fact,) = reader.accounting_facts(HistoryFilter(job_id=1))
    assert (fact.cpu_s, fact.peak_bytes) == (130.0, 1 << 31)
    (record,) = reader.history(None, 10, None, where=HistoryFilter(job_id=1))
    assert record.usage is not None and record.usage["cgroup_cpu_s"] == 130.0


def test_the_migration_records_attempts_that_ended_before_it(store_url: str) -> None:
    raw = RawDatabase(store_url)
    assert raw.migrate(up_to=13) == 13
    with raw.transaction() as db:
        for job_id in JOBS:
            write(db, job_id)
    assert raw.migrate() >= 14
    rows = raw.rows("SELECT job_id, number, owner, queue, state FROM accounting ORDER BY job_id, number")
    assert rows == [(1, 1, "alice", "default", "completed"), (2, 1, "alice", "q2", "failed"),
                    (3, 1, "bob", "q2", "requeued"), (3, 2, "bob", "q2", "completed"), (4, 1, "carol", "default", "timeout")]
    raw.close()
