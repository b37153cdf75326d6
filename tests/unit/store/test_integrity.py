"""The store's integrity checks (store/integrity.py) on both backends, and a damaged store's
refusal of writes (SqlStore.damaged)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from drover.store.base import Changes, open_store
from drover.store.faults import StoreFault
from drover.store.integrity import check
from drover.store.sql_store import SqlStore


def test_a_sound_store_passes_on_either_backend(store_url: str) -> None:
    store = open_store(store_url)
    try:
        found = check(store_url)
        quick = check(store_url, quick=True)
    finally:
        store.close()
    assert found.sound and quick.sound
    if store_url.startswith("sqlite"):
        assert (found.method, quick.method) == ("PRAGMA integrity_check", "PRAGMA quick_check")
        assert found.describe() == "PRAGMA integrity_check: ok"
    else:  # the private server has no amcheck installed until a test makes it
        assert found.skipped is not None and "amcheck" in found.describe() and found.describe().startswith("not checked")


def test_postgres_indexes_are_checked_where_amcheck_is_installed(postgres_url: str) -> None:
    from drover.store.postgres import connect

    store = open_store(postgres_url)
    try:
        with connect(postgres_url, "test") as connection:
            try:
                connection.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
            except Exception as error:  # psycopg.Error: a server without its contrib modules
                pytest.skip(f"amcheck cannot be installed on this server: {error}")
        found = check(postgres_url)
    finally:
        store.close()
    assert found.sound and found.skipped is None and found.method.startswith("amcheck (bt_index_check of ")
    assert int(found.method.split(" of ")[1].split()[0]) > 5  # the schema's indexes, primary keys included


def test_a_damaged_page_is_found_and_named(tmp_path: Path) -> None:
    path = tmp_path / "drover.db"
    open_store(f"sqlite://{path}").close()
    with sqlite3.connect(path) as db:
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'events'").fetchone()
    with open(path, "r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\x5a" * page_size)
    found = check(f"sqlite://{path}", quick=True)
    assert not found.sound and found.problems
    assert found.describe().startswith("PRAGMA quick_check found damage: ")
    assert found.refusal().startswith(f"the job store {path} cannot be used: it is corrupt (PRAGMA quick_check")


def test_a_store_marked_damaged_refuses_every_write_and_takes_them_again_once_cleared(tmp_path: Path) -> None:
    store = open_store(f"sqlite://{tmp_path / 'drover.db'}")
    assert isinstance(store, SqlStore)
    try:
        store.damaged = "the job store x cannot be used: it is corrupt (PRAGMA quick_check found damage: …)"
        with pytest.raises(StoreFault, match="it is corrupt"):
            store.commit(Changes())
        store.damaged = None
        store.commit(Changes())
    finally:
        store.close()
