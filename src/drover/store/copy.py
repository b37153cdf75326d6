"""`drover store copy`: a whole store moved to another database (SQLite to PostgreSQL, or back),
every table in dependency order, in one transaction on the target, then verified: each table's
row count and checksum, computed the same way on both sides, must agree.

The checksum of a table is SHA-256 over its rows in key order (text keys by their bytes on both
backends), each row its values as canonical JSON; numbers keep their kind (an integer column
gives integers, a real column floats, on either backend), so equal figures mean equal rows.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from drover.core.errors import DroverError
from drover.store.database import Database
from drover.store.migrate import newest_version

# Every table of the schema, parents before what refers to them, each with the key its rows
# are read in. A table a migration adds must be named here: copy refuses a schema it does not know.
TABLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("jobs", ("id",)),
    ("job_payloads", ("job_id",)),
    ("tasks", ("job_id", "idx")),
    ("attempts", ("job_id", "idx", "number")),
    ("accounting", ("job_id", "idx", "number")),  # made by triggers from the three above: copied as it is
    ("events", ("seq",)),
    ("nodes", ("name",)),
    ("queues", ("name",)),
    ("join_tokens", ("id",)),
    ("node_certificates", ("serial",)),
    ("submission_keys", ("owner", "request_key")),
    ("alloc_queues", ("id",)),
    ("allocations", ("queue_id", "outer_id")),
)
BATCH = 1000
_canonical = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=True).encode


class CopyRefused(DroverError):
    """The copy cannot start: what is wrong with the source or the target, and what to do."""

    exit_code = 1


@dataclass(frozen=True, slots=True)
class TableFigures:
    table: str
    rows: int
    checksum: str  # hex SHA-256


@dataclass(frozen=True, slots=True)
class CopyReport:
    source: list[TableFigures]
    target: list[TableFigures]

    @property
    def matches(self) -> bool:
        return self.source == self.target


def figures(database: Database) -> list[TableFigures]:
    """Each table's row count and checksum, read in one snapshot."""
    columns = _columns(database)
    with database.transaction(database.dialect.begin_snapshot):
        return [_table_figures(database, table, columns[table], key) for table, key in TABLES]


def copy_store(source_url: str, target_url: str, force: bool = False) -> CopyReport:
    source = Database(source_url, create=False)
    try:
        target = Database(target_url)
        try:
            return _copy(source, target, force)
        finally:
            target.close()
    finally:
        source.close()


def _copy(source: Database, target: Database, force: bool) -> CopyReport:
    newest = newest_version()
    if source.version() != newest:
        raise CopyRefused(f"{source.shown} has schema version {source.version()}, this Drover's is {newest}: "
                          f"run `drover store migrate --url {source.shown}` first")
    target.migrate()
    columns = _columns(source)
    if _columns(target) != columns:
        raise CopyRefused(f"{target.shown} has other tables or columns than {source.shown}: "
                          "is it a database of another program?")
    if not force and any(target.count(table) for table, _ in TABLES):
        raise CopyRefused(f"{target.shown} already holds a store: copy into an empty database, "
                          "or add --force to replace what it holds")
    # The source is read in one snapshot, which its checksums are taken in too: a controller
    # still writing to it would make the figures disagree, not the copy silently partial.
    with source.transaction(source.dialect.begin_snapshot), target.transaction() as db:
        if force:
            for table, _ in reversed(TABLES):
                db.execute(f"DELETE FROM {table}", ())
        if target.backend == "postgresql":
            # The accounting rows are copied as they are: its triggers would only make them again.
            for table in ("tasks", "attempts"):
                db.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER", ())
        for table, key in TABLES:
            names = [name for name, _ in columns[table]]
            if table == "accounting":
                db.execute("DELETE FROM accounting", ())  # what SQLite's triggers made meanwhile
            insert = f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
            rows = _rows(source, table, columns[table], key)
            while batch := list(itertools.islice(rows, BATCH)):
                db.executemany(insert, batch)
        if target.backend == "postgresql":
            for table in ("tasks", "attempts"):
                db.execute(f"ALTER TABLE {table} ENABLE TRIGGER USER", ())
            # Rows written by hand take numbers after the copied events (the store numbers its own).
            db.execute("SELECT setval(pg_get_serial_sequence('events', 'seq'), COALESCE(MAX(seq), 1), "
                       "MAX(seq) IS NOT NULL) FROM events", ())
        before = [_table_figures(source, table, columns[table], key) for table, key in TABLES]
    return CopyReport(before, figures(target))


def _columns(database: Database) -> dict[str, list[tuple[str, str]]]:
    found = database.tables()
    unknown = sorted(set(found) - {table for table, _ in TABLES})
    if unknown:
        raise CopyRefused(f"{database.shown} has tables this Drover does not know ({', '.join(unknown)}): "
                          "is it a newer Drover's?")
    missing = sorted({table for table, _ in TABLES} - set(found))
    if missing:
        raise CopyRefused(f"{database.shown} lacks the tables {', '.join(missing)}: "
                          f"run `drover store migrate --url {database.shown}`")
    return found


def _rows(database: Database, table: str, columns: list[tuple[str, str]], key: tuple[str, ...]) -> Iterator[Any]:
    families = dict(columns)
    order = ", ".join(database.dialect.binary_order.format(k) if families[k] == "text" else k for k in key)
    return iter(database.db.execute(f"SELECT {', '.join(name for name, _ in columns)} FROM {table} ORDER BY {order}", ()))


def _table_figures(database: Database, table: str, columns: list[tuple[str, str]], key: tuple[str, ...]) -> TableFigures:
    digest = hashlib.sha256()
    count = 0
    families = [family for _, family in columns]
    for row in _rows(database, table, columns, key):
        digest.update(_canonical([_value(value, family) for value, family in zip(row, families)]).encode())
        digest.update(b"\n")
        count += 1
    return TableFigures(table, count, digest.hexdigest())


def _value(value: Any, family: str) -> Any:
    """A value as the checksum reads it: by its column's kind, so that an integral REAL SQLite
    returns as a float and PostgreSQL as a double hash alike; anything else is kept as it is,
    and a value the target changed (a fraction in an integer column) shows as a mismatch."""
    if family == "real" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, bytes):
        return value.hex()
    return value
