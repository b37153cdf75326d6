"""`drover store copy`: a store holding running, pending, held and ended jobs, made by the
controller's own handlers on SQLite, copied to PostgreSQL and back with equal row counts and
checksums; the copy opens as the same cluster; a non-empty target is refused unless --force."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers.controller_world import OK, WITHOUT_PROMISES, World

from drover.core.membership import TokenRecord
from drover.store.admin import CopyRefused, check, copy_store, figures
from drover.store.base import Changes, SubmissionKey, open_store
from drover.store.database import Database
from drover.store.sql_store import SqlStore


def a_busy_store(url: str) -> None:
    """Two nodes; jobs ended (one failed), running, pending (an array waiting for room), held."""
    world = World(url)
    world.options = WITHOUT_PROMISES  # the array waits with one task record (held), none promised
    world.connect("n1", cpus=2)
    (ended,), (failed,) = world.submit(), world.submit()
    for order in world.schedule():
        world.started(order.attempt)
        world.exited(order.attempt, dict(OK, exit_code=0 if order.attempt.startswith(f"{ended}.") else 3))
    (running,) = world.submit(cpus=2)
    (waiting,) = world.submit(array="0-9")
    (held,) = world.submit()
    world.act("hold", str(held))
    for order in world.schedule():
        world.started(order.attempt)
    world.connect("n2", cpus=1)
    world.act("hold", f"{waiting}.5")
    assert isinstance(world.store, SqlStore)
    world.store.add_join_token(TokenRecord("0123456789ab", "f" * 64, 1.0, "root", 9e9, 3, None))
    world.store.commit(Changes(submissions=[SubmissionKey("alice", "k-0123456789", (running,), 2.5)]))
    assert world.ended == [ended, failed]
    jobs = world.state.jobs
    assert jobs[running].tasks[0].state == "running" and jobs[held].fresh_state == "held"
    assert jobs[waiting].tasks[5].state == "held" and jobs[waiting].fresh_state == "pending"
    world.store.close()


def test_a_busy_store_copies_to_postgresql_and_back_with_equal_figures(tmp_path: Path, postgres_url: str) -> None:
    source = f"sqlite://{tmp_path}/drover.db"
    a_busy_store(source)
    there = copy_store(source, postgres_url)
    assert there.matches
    rows = {f.table: f.rows for f in there.target}
    assert rows["jobs"] == 5 and rows["tasks"] == 4 and rows["attempts"] >= 3 and rows["accounting"] == 2
    assert rows["events"] > 10 and rows["nodes"] == 2 and rows["join_tokens"] == 1 and rows["submission_keys"] == 1
    back = copy_store(postgres_url, f"sqlite://{tmp_path}/back.db")
    assert back.matches and back.target == there.source  # the same figures, whichever way

    original, copied = open_store(source), open_store(postgres_url)
    try:
        mine, theirs = original.load_working_set(), copied.load_working_set()
        assert mine == theirs  # the cluster as the controller loads it: jobs, tasks, attempts, nodes
        assert original.events_of(None, 0, 1000) == copied.events_of(None, 0, 1000)
        assert original.recent_submissions(10) == copied.recent_submissions(10) != []
        reader = copied.reader()
        assert [r.job_id for r in reader.history(None, 10, None)] == [
            r.job_id for r in original.reader().history(None, 10, None)]
        reader.close()
    finally:
        original.close()
        copied.close()
    status = check(postgres_url)
    assert status.is_current and status.counts["jobs"] == 5


def test_a_target_that_holds_a_store_is_refused_unless_forced(tmp_path: Path, postgres_url: str) -> None:
    source = f"sqlite://{tmp_path}/drover.db"
    a_busy_store(source)
    assert copy_store(source, postgres_url).matches
    with pytest.raises(CopyRefused, match="already holds a store.*--force"):
        copy_store(source, postgres_url)
    assert copy_store(source, postgres_url, force=True).matches


def test_a_difference_shows_in_the_figures(tmp_path: Path, postgres_url: str) -> None:
    source = f"sqlite://{tmp_path}/drover.db"
    a_busy_store(source)
    copy_store(source, postgres_url)
    target = Database(postgres_url)
    with target.transaction() as db:
        db.execute("UPDATE jobs SET name = 'changed' WHERE id = 1")
    changed = figures(target)
    target.close()
    source_figures = figures(Database(source, create=False))
    assert [f.table for f, g in zip(source_figures, changed, strict=True) if f != g] == ["jobs"]


def test_drover_store_copy_and_check_print_their_figures(tmp_path: Path, postgres_url: str) -> None:
    source = f"sqlite://{tmp_path}/drover.db"
    a_busy_store(source)

    def drover(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "drover", "store", *args], capture_output=True, text=True,
                              timeout=60)

    copied = drover("copy", "--from", source, "--to", postgres_url)
    assert copied.returncode == 0, copied.stderr
    assert "every table's rows and checksum agree" in copied.stdout and "jobs" in copied.stdout
    checked = drover("check", "--url", postgres_url)
    assert checked.returncode == 0 and "current" in checked.stdout and "jobs" in checked.stdout
    for args in (("--json", "check", "--url", postgres_url), ("check", "--url", postgres_url, "--json")):
        as_json = drover(*args)  # --json before the action or after it, as with every command
        assert as_json.returncode == 0 and json.loads(as_json.stdout)["counts"]["jobs"] == 5, as_json.stderr
    again = drover("copy", "--from", source, "--to", postgres_url)
    assert again.returncode == 1 and "--force" in again.stderr and "Traceback" not in again.stderr

    behind = Database(f"sqlite://{tmp_path}/old.db")
    behind.migrate(up_to=3)
    behind.close()
    assert drover("check", "--url", f"sqlite://{tmp_path}/old.db").returncode == 1
    assert drover("migrate", "--url", f"sqlite://{tmp_path}/old.db").returncode == 0
    assert drover("check", "--url", f"sqlite://{tmp_path}/old.db").returncode == 0
    unreachable = drover("check", "--url", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    assert unreachable.returncode == 2 and "cannot be reached" in unreachable.stderr
    assert len(unreachable.stderr.strip().splitlines()) == 1
