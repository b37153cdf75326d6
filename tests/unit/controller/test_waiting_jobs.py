"""Dependencies and begin times in the controller: what starts, what waits and why, what is
cancelled, on a real (temporary) SQLite store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from tests.helpers.controller_world import OK, World

from drover.core.errors import NotFound
from drover.protocol.api import DependencyOn
from drover.store.migrate import migrations
from drover.store.sqlite import SqliteStore

FAIL = {**OK, "exit_code": 3}


@pytest.fixture
def world(tmp_path: Path) -> World:
    w = World(tmp_path / "drover.db")
    w.connect(cpus=4)
    return w


def dep(kind: str, job: int = 0, task: int | None = None, per_task: bool = False) -> DependencyOn:
    return DependencyOn(kind=kind, job=job, task=task, per_task=per_task)


def reason(world: World, job: int) -> tuple[str, str] | None:
    waiting = world.state.pending_reasons.get(job)
    return (waiting.value, waiting.explanation) if waiting else None


def test_afternotok_starts_only_after_its_job_failed(world: World) -> None:
    (first,) = world.submit()
    (order,) = world.schedule()
    (second,) = world.submit(dependencies=[dep("afternotok", first)])
    assert world.schedule() == []
    assert reason(world, second) == ("dependency", f"waiting for job {first} (afternotok) to fail")
    world.started(order.attempt)
    world.exited(order.attempt, FAIL)
    (started,) = world.schedule()
    assert started.config["job_id"] == second


def test_afterok_on_a_job_that_failed_is_cancelled_with_the_reason(world: World) -> None:
    (first,) = world.submit()
    (order,) = world.schedule()
    (second,) = world.submit(dependencies=[dep("afterok", first)])
    (kept,) = world.submit(dependencies=[dep("afterok", first)], kill_on_invalid_dep=False)
    world.started(order.attempt)
    world.exited(order.attempt, FAIL)
    assert world.schedule() == []
    job = world.store.load_job(second)
    assert job is not None and job.state is not None and job.state.value == "cancelled"
    assert job.end_reason == f"cancelled: its dependency can never be met (job {first} (afterok) did not complete)"
    assert "dependency_never_satisfied" in world.event_kinds(second) and second in world.ended
    assert reason(world, kept) == ("dependency_never_satisfied", f"job {first} (afterok) did not complete")


def test_after_waits_for_the_start_and_afterany_for_any_end(world: World) -> None:
    (first,) = world.submit()
    (after,) = world.submit(dependencies=[dep("after", first)])
    (any_end,) = world.submit(dependencies=[dep("afterany", first), dep("afterok", first)], dependency_any=True)
    orders = world.schedule()
    assert [o.config["job_id"] for o in orders] == [first]
    world.started(orders[0].attempt)
    assert [o.config["job_id"] for o in world.schedule()] == [after]
    world.exited(orders[0].attempt, FAIL)
    assert [o.config["job_id"] for o in world.schedule()] == [any_end]


def test_aftercorr_starts_each_task_after_the_same_task(world: World) -> None:
    (first,) = world.submit(array="1-3")
    orders = world.schedule()
    (second,) = world.submit(array="1-3", dependencies=[dep("afterok", first, per_task=True)])
    assert world.schedule() == []
    world.started(orders[1].attempt)
    world.exited(orders[1].attempt)  # task 2 completed
    assert [(o.config["job_id"], o.config["task_index"]) for o in world.schedule()] == [(second, 2)]


def test_singleton_jobs_of_one_name_run_one_at_a_time(world: World) -> None:
    ids = [world.submit(name="one", dependencies=[dep("singleton")])[0] for _ in range(2)]
    (order,) = world.schedule()
    assert order.config["job_id"] == ids[0]
    assert reason(world, ids[1])[0] == "dependency"  # type: ignore[index]
    world.started(order.attempt)
    assert world.schedule() == []
    world.exited(order.attempt)
    assert [o.config["job_id"] for o in world.schedule()] == [ids[1]]


def test_a_job_waits_for_its_begin_time(world: World) -> None:
    begin = world.now + 60
    (job,) = world.submit(begin_at=begin)
    assert world.schedule() == []
    assert reason(world, job)[0] == "begin_time" and world.state.wake_at == begin  # type: ignore[index]
    world.now = begin
    assert [o.config["job_id"] for o in world.schedule()] == [job]


def test_a_dependency_on_a_job_that_does_not_exist_is_refused(world: World) -> None:
    with pytest.raises(NotFound, match="job 999"):
        world.submit(dependencies=[dep("afterany", 999)])


def test_an_old_database_keeps_its_afterok_dependencies(tmp_path: Path) -> None:
    """A database from before migration 0011 opens with its after_ok ids as afterok records."""
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    for version, sql in migrations():
        if version <= 10:
            db.executescript(f"BEGIN;\n{sql}\nPRAGMA user_version = {version};\nCOMMIT;")
    columns = [row[1] for row in db.execute("PRAGMA table_info(jobs)")]
    row = {column: None for column in columns} | {
        "id": 2, "owner": "alice", "name": "j", "submitted_at": 1.0, "priority": 0, "cpus": 1, "memory_mib": 0,
        "indices": "[]", "is_array": 0, "after_ok": "[1,5]", "spec": '{"script":"true\\n","workdir":"/tmp"}',
        "fresh_from": 0, "fresh_state": "pending", "fresh_skip": "[]"}
    db.execute(f"INSERT INTO jobs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    db.commit()
    db.close()
    store = SqliteStore(str(path))
    loaded = store.load_job(2)
    store.close()
    assert loaded is not None and loaded.dependencies.text == "afterok:1,afterok:5"
    assert loaded.begin_at is None
