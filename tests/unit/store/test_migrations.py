"""The schema on both backends: each numbered migration exists for SQLite and PostgreSQL under
the same name, both make the same tables, columns and indexes, an empty database migrates to
the newest version, and a database left at any earlier version migrates with its rows intact."""

from __future__ import annotations

import json

import pytest

from drover.core.job_spec import JobSpec
from drover.store.base import open_store
from drover.store.database import Database
from drover.store.migrate import migration_files, newest_version

T0 = 1_790_000_000.0
NEWEST = newest_version()


def test_every_migration_exists_for_both_backends_under_the_same_name() -> None:
    sqlite, postgres = migration_files("sqlite"), migration_files("postgresql")
    assert {v: name for v, (name, _) in sqlite.items()} == {v: name for v, (name, _) in postgres.items()}
    assert sorted(sqlite) == list(range(1, NEWEST + 1))  # numbered without gaps


def test_both_backends_make_the_same_schema(tmp_path: object, postgres_url: str) -> None:
    sqlite, postgres = Database(f"sqlite://{tmp_path}/drover.db"), Database(postgres_url)
    try:
        assert sqlite.migrate() == postgres.migrate() == NEWEST
        assert sqlite.tables() == postgres.tables()  # the same names, columns in order, kinds of value
        assert sqlite.names("index") == postgres.names("index")
        assert sqlite.names("view") == postgres.names("view")
    finally:
        sqlite.close()
        postgres.close()


def test_an_empty_database_migrates_to_the_newest_version_and_once_only(store_url: str) -> None:
    database = Database(store_url)
    assert database.version() == 0
    assert database.migrate() == NEWEST and database.migrate() == NEWEST
    assert database.version() == NEWEST
    database.close()
    store = open_store(store_url)  # and the store opens it as it is
    assert store.load_working_set().next_job_id == 1
    store.close()


def rows_at(version: int) -> dict[str, list[dict[str, object]]]:
    """Representative rows: job 1 ended (its attempt too), job 2 running and waiting on job 1,
    a node, an event of each; only the columns a version has are written."""
    spec = json.dumps({"queue": "q2", "time_limit_s": 600, "script": "true\n", "workdir": "/tmp"})
    usage = json.dumps({"user_cpu_s": 3.0, "sys_cpu_s": 1.0, "max_rss_kib": 2048, "wall_s": 10.0})
    job = {"owner": "alice", "name": "j", "submitted_at": T0, "priority": 0, "cpus": 1, "memory_mib": 100,
           "indices": "[[0,0,1]]", "is_array": 0, "spec": spec}
    task = {"idx": 0, "state_since": T0 + 20, "attempt": 1}
    attempt = {"idx": 0, "number": 1, "node": "n1", "cpu_ids": "[0]", "dispatched_at": T0 + 1, "started_at": T0 + 2}
    return {
        "jobs": [dict(job, id=1, after_ok="[]", ended_at=T0 + 20, state="completed"),
                 # From version 11 on, the store writes dependencies and no longer after_ok.
                 dict(job, id=2, after_ok="[1]" if version < 11 else "[]",
                      dependencies='{"any":false,"on":[{"kind":"afterok","job":1}]}')],
        "tasks": [dict(task, job_id=1, state="completed", exit_status=0), dict(task, job_id=2, state="running")],
        "attempts": [dict(attempt, job_id=1, ended_at=T0 + 20, exit=json.dumps({"exit_code": 0}), usage=usage),
                     dict(attempt, job_id=2)],
        "nodes": [{"name": "n1", "cpus": 2, "memory_mib": 4096, "state": "up", "registered_at": T0}],
        "events": [{"seq": 1, "time": T0, "job_id": 1, "kind": "submitted"},
                   {"seq": 2, "time": T0 + 20, "job_id": 1, "kind": "job_ended"}],
    }


@pytest.mark.parametrize("version", range(1, NEWEST))
def test_a_database_left_at_an_earlier_version_migrates_with_its_rows(store_url: str, version: int) -> None:
    database = Database(store_url)
    assert database.migrate(up_to=version) == version
    tables = database.tables()
    with database.transaction() as db:
        for table, rows in rows_at(version).items():
            known = {name for name, _ in tables[table]}
            for row in rows:
                names = [name for name in row if name in known]
                db.execute(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                           [row[name] for name in names])
    assert database.migrate() == NEWEST
    accounting = database.rows("SELECT job_id, owner, queue, state, cpu_s, time_limit_s FROM accounting")
    database.close()
    assert accounting == [(1, "alice", "q2", "completed", 4.0, 600)]  # the ended attempt, back-filled
    store = open_store(store_url)
    working = store.load_working_set()
    assert list(working.jobs) == [2] and working.next_job_id == 3 and list(working.nodes) == ["n1"]
    (dependency,) = working.jobs[2].dependencies.on  # the afterok list, carried over (migration 11)
    assert (dependency.kind, dependency.job) == ("afterok", 1)
    ended = store.load_job(1)
    assert ended is not None and ended.state == "completed" and ended.tasks[0].exit_status == 0
    assert [e.kind for _, e in store.events_of(1, 0, 10)] == ["submitted", "job_ended"]
    assert store.recent_submissions(10) == []  # migration 16: no key was kept before it
    # Migration 21: the payload of a job stored before is where it was, in its spec; read from there
    # when an order is made, never held in the working set.
    # Each key the row lacks has its default (core/job_spec.py), the ones it has are read.
    assert working.jobs[2].payload_bytes == len("true\n")
    assert working.jobs[2].spec == JobSpec(queue="q2", time_limit_s=600, workdir="/tmp")
    assert store.job_payloads([1, 2]) == {job_id: {"script": "true\n", "environment": {}, "stage_in": []}
                                          for job_id in (1, 2)}
    store.close()
