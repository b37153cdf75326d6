"""Faults of the disk and the store under a running cluster: a request the store cannot commit
(the disk is full, another process holds the database) is answered with the cause and the file,
nothing acknowledged is lost, a job that ends meanwhile is recorded with its true outcome once
there is room again, a node that cannot write an attempt's spool goes to ERROR while the job
waits, and the cluster goes on by itself when the cause is gone. The disks are small tmpfs
mounts the tests make."""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until


@pytest.fixture
def small_disk() -> Iterator[LocalCluster]:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs for the state directory needs root and mount(8)")
    local = LocalCluster()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m,mode=0700", "drover-test", str(local.state_dir)],
                   check=True)
    try:
        local.start()
        yield local
    finally:
        print(local.logs())
        problems = local.stop()
        subprocess.run(["umount", "--lazy", str(local.state_dir)], check=False)
        shutil.rmtree(local.root, ignore_errors=True)
        assert not problems, problems


def fill(directory: Path) -> Path:
    """Write until the filesystem has no byte left; the filler is what frees it again."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as file:
        for size in (1 << 20, 1 << 16, 1 << 12, 1):
            try:
                while True:
                    file.write(bytes(size))
            except OSError as error:
                assert error.errno == errno.ENOSPC
    return filler


def state(cluster: LocalCluster, job: int) -> str:
    return str(cluster.drover_json("show", str(job))["state"])


def test_a_full_disk_is_named_nothing_acknowledged_is_lost_and_a_running_job_keeps_its_outcome(
        small_disk: LocalCluster) -> None:
    cluster = small_disk
    flag = cluster.workdir / "go"
    running = cluster.submit("-o", "running.out", "--", "bash", "-c", f"while [ ! -e {flag} ]; do sleep 0.1; done; "
                             "echo finished; exit 3")
    wait_until(lambda: state(cluster, running) == "running", describe="the job to run")
    filler = fill(cluster.state_dir)

    refused = cluster.drover("submit", "--", "true", check=False)
    assert refused.returncode == 2, refused
    assert "disk is full" in refused.stderr and str(cluster.state_dir / "drover.db") in refused.stderr
    assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1

    flag.touch()  # the job ends while the disk is full: its shepherd spends the attempt's reserve
    wait_until(lambda: (cluster.workdir / "running.out").exists(), describe="the job's output")
    listed = cluster.drover("status", "--all", check=False)  # reads still answer
    assert listed.returncode == 0, listed.stderr

    filler.unlink()
    wait_until(lambda: state(cluster, running) == "failed", timeout=60, describe="the job's end to be recorded")
    shown = cluster.drover_json("show", str(running))
    (task,) = shown["tasks"]
    assert task["exit_status"] == 3  # its own exit status, not "the shepherd died"
    assert [a["exit_code"] for a in task["attempts"]] == [3]  # exactly once
    assert (cluster.workdir / "running.out").read_text() == "finished\n"

    again = cluster.submit("--", "true")  # the cluster goes on by itself
    wait_until(lambda: state(cluster, again) == "completed", describe="a new job to run")


def test_a_node_whose_spool_is_full_goes_to_error_and_the_job_waits_unharmed(small_disk: LocalCluster) -> None:
    cluster = small_disk
    spool = cluster.spool
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0711", "drover-test-spool", str(spool)], check=True)
    try:
        filler = fill(spool)
        job = cluster.submit("-o", "hello.out", "--", "echo", "hello")
        wait_until(lambda: cluster.drover_json("nodes")[0]["state"] == "error", describe="the node to go to ERROR")
        (node,) = cluster.drover_json("nodes")
        assert "could not prepare the attempt" in node["reason"] and "No space left on device" in node["reason"]
        shown = cluster.drover_json("show", str(job))
        assert shown["state"] == "pending"  # requeued, not failed: the job never ran
        assert shown["tasks"][0]["attempts"][0]["failure"].startswith("the node could not prepare the attempt")

        filler.unlink()
        cluster.drover("nodes", "--resume", node["name"])
        wait_until(lambda: state(cluster, job) == "completed", describe="the job to run once there is room")
        assert (cluster.workdir / "hello.out").read_text() == "hello\n"
    finally:
        cluster.stop()
        subprocess.run(["umount", "--lazy", str(spool)], check=False)


def test_a_store_locked_by_another_process_is_named_and_the_cluster_goes_on_once_it_is_let_go(
        cluster: LocalCluster) -> None:
    before = cluster.submit("--", "true")
    wait_until(lambda: state(cluster, before) == "completed", describe="a job before")
    other = sqlite3.connect(cluster.state_dir / "drover.db", isolation_level=None)  # a sqlite3 shell, say
    try:
        other.execute("BEGIN EXCLUSIVE")
        refused = cluster.drover("submit", "--", "true", check=False)
        assert refused.returncode == 2, refused
        assert "another process holds it locked" in refused.stderr, refused.stderr
        assert str(cluster.state_dir / "drover.db") in refused.stderr and "Traceback" not in refused.stderr
    finally:
        other.close()
    after = cluster.submit("--", "true")
    wait_until(lambda: state(cluster, after) == "completed", describe="a job once the lock is gone")
    assert sorted(job["id"] for job in cluster.drover_json("status", "--all")) == [before, after]


def test_a_store_corrupted_under_a_running_controller_is_named_and_nothing_before_is_lost(
        cluster: LocalCluster) -> None:
    before = cluster.submit("--", "true")
    wait_until(lambda: state(cluster, before) == "completed", describe="a job before")
    database = cluster.state_dir / "drover.db"
    with sqlite3.connect(database) as db:  # the WAL's pages into the file, so the header below is all of it
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    header = database.read_bytes()[:100]
    with open(database, "r+b") as file:  # a stray write, a failing disk: the header is garbage
        file.write(os.urandom(100))
    try:
        refused = cluster.drover("submit", "--", "true", check=False)
    finally:
        with open(database, "r+b") as file:  # restored from a backup
            file.write(header)
    assert refused.returncode == 2, refused
    assert str(database) in refused.stderr and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    after = cluster.submit("--", "true")
    wait_until(lambda: state(cluster, after) == "completed", describe="a job once the store is restored")
    assert sorted(job["id"] for job in cluster.drover_json("status", "--all")) == [before, after]


def _damage_a_page_of(database: Path, table: str) -> tuple[int, bytes]:
    """Write garbage over the first page of `table` in the file, as a stray write or a failing
    disk would (the WAL checkpointed first, so the file holds the page); (offset, what was there)."""
    with sqlite3.connect(database) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    offset = (root - 1) * page_size
    with open(database, "r+b") as file:
        file.seek(offset)
        before = file.read(page_size)
        file.seek(offset)
        file.write(b"\xa5" * page_size)
    return offset, before


def _restore(database: Path, offset: int, page: bytes) -> None:
    with open(database, "r+b") as file:
        file.seek(offset)
        file.write(page)


def test_store_check_finds_a_damaged_page_of_a_table_and_says_so(tmp_path: Path) -> None:
    from drover.store.sqlite import SqliteStore

    database = tmp_path / "drover.db"
    SqliteStore(str(database)).close()
    checked = subprocess.run([sys.executable, "-m", "drover", "store", "check", "--url", f"sqlite://{database}"],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and "integrity: PRAGMA integrity_check: ok" in checked.stdout, checked
    offset, page = _damage_a_page_of(database, "jobs")
    damaged = subprocess.run([sys.executable, "-m", "drover", "store", "check", "--url", f"sqlite://{database}"],
                             capture_output=True, text=True, timeout=60)
    assert damaged.returncode == 3, damaged
    assert "integrity: PRAGMA integrity_check found damage: " in damaged.stdout, damaged.stdout
    assert f"the job store {database} cannot be used: it is corrupt" in damaged.stderr, damaged.stderr
    assert "Traceback" not in damaged.stderr
    _restore(database, offset, page)
    assert subprocess.run([sys.executable, "-m", "drover", "store", "check", "--url", f"sqlite://{database}"],
                          capture_output=True, text=True, timeout=60).returncode == 0


@pytest.fixture
def checked_often(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    from tests.helpers.cluster import serve

    yield from serve(request, LocalCluster(config_toml="[controller]\nstore_check_s = 0.2\n"))


def test_a_running_controller_notices_a_damaged_page_on_its_schedule_and_refuses_writes(
        checked_often: LocalCluster) -> None:
    cluster = checked_often
    before = cluster.submit("--", "true")
    wait_until(lambda: state(cluster, before) == "completed", describe="a job before")
    database = cluster.state_dir / "drover.db"
    offset, page = _damage_a_page_of(database, "jobs")
    try:
        wait_until(lambda: "every write is refused" in (cluster.state_dir / "controller.log").read_text(),
                   describe="the controller's check to find the damage")
        refused = cluster.drover("submit", "--", "true", check=False)
        assert refused.returncode == 2, refused
        assert f"the job store {database} cannot be used: it is corrupt (PRAGMA quick_check found damage" \
            in refused.stderr, refused.stderr
        assert [node["state"] for node in cluster.drover_json("nodes")] == ["up"]  # reads from memory go on
    finally:
        _restore(database, offset, page)  # restored from a backup
    wait_until(lambda: "is sound again" in (cluster.state_dir / "controller.log").read_text(),
               describe="the controller's check to find it sound again")
    after = cluster.submit("--", "true")
    wait_until(lambda: state(cluster, after) == "completed", describe="a job once the store is restored")
