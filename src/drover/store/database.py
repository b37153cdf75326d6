"""A store's database without the store: opened by URL, its schema version read or brought up
to date, its tables listed and written directly. For `drover store` (migrate, check, copy) and
for tests; the controller goes through SqliteStore or PostgresStore instead."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from drover.store.dialect import POSTGRES, SQLITE, Dialect
from drover.store.faults import StoreFault, fault
from drover.store.migrate import migrate_postgres, migrate_sqlite, postgres_version, sqlite_version
from drover.store.sql_store import Db
from drover.store.urls import backend_of, shown, sqlite_path

# Drover's own bookkeeping, which no copy or comparison takes: PostgreSQL's schema version, and
# which controller is the active one (store/leadership.py).
BOOKKEEPING = frozenset({"drover_schema", "drover_leader"})


class Database:
    def __init__(self, url: str, create: bool = True) -> None:
        """`create`: a missing SQLite file is made (else: a StoreFault that says it is missing)."""
        self.url = url
        self.shown = shown(url)
        self.backend = backend_of(url)
        self.dialect: Dialect = SQLITE if self.backend == "sqlite" else POSTGRES
        self.connection: Any
        self.db: Db
        if self.backend == "sqlite":
            path = sqlite_path(url)
            if not create and not os.path.exists(path):
                raise StoreFault(f"the job store {path} does not exist")
            if create and os.path.dirname(path):
                os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                self.connection = sqlite3.connect(f"file:{quote(path)}?mode={'rwc' if create else 'rw'}", uri=True,
                                                  isolation_level=None)
                self.connection.execute("PRAGMA busy_timeout=2000")
            except sqlite3.Error as error:
                raise fault(path, error) from error
            self.db = self.connection
        else:
            from drover.store.postgres import PgDb, connect

            self.connection = connect(url, "drover-store-admin")
            self.db = PgDb(self.connection)

    def version(self) -> int:
        if self.backend == "sqlite":
            return sqlite_version(self.connection)
        return postgres_version(self.connection)

    def migrate(self, up_to: int | None = None) -> int:
        if self.backend == "sqlite":
            return migrate_sqlite(self.connection, up_to)
        return migrate_postgres(self.connection, up_to)

    def tables(self) -> dict[str, list[tuple[str, str]]]:
        """Each table (not view) → its columns, in order, as (name, type family): "integer",
        "real" or "text", so that both backends' schemas compare."""
        if self.backend == "sqlite":
            names = [row[0] for row in self.db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name", ())]
            return {name: [(row[1], _family(row[2])) for row in self.db.execute(f"PRAGMA table_info({name})", ())]
                    for name in names if name not in BOOKKEEPING}
        found: dict[str, list[tuple[str, str]]] = {}
        for table, column, kind in self.db.execute(
                "SELECT c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
                "JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
                "WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' "
                "ORDER BY c.table_name, c.ordinal_position", ()):
            if table not in BOOKKEEPING:
                found.setdefault(table, []).append((column, _family(kind)))
        return found

    def names(self, kind: str) -> set[str]:
        """The names of the schema's indexes, views or triggers (`kind`) but those a table's
        key makes by itself."""
        if self.backend == "sqlite":
            return {row[0] for row in self.db.execute(
                "SELECT name FROM sqlite_master WHERE type = ? AND name NOT LIKE 'sqlite_%'", (kind,))}
        query = {
            "index": "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname NOT LIKE '%_pkey'",
            "view": "SELECT viewname FROM pg_views WHERE schemaname = current_schema()",
            "trigger": "SELECT DISTINCT trigger_name FROM information_schema.triggers "
                       "WHERE trigger_schema = current_schema()",
        }[kind]
        return {row[0] for row in self.db.execute(query, ())}

    def count(self, table: str) -> int:
        return int(self.db.execute(f"SELECT COUNT(*) FROM {table}", ()).fetchone()[0])

    @contextlib.contextmanager
    def transaction(self, begin: str | None = None) -> Iterator[Db]:
        """A transaction (the dialect's write transaction unless `begin` says otherwise),
        rolled back on any failure."""
        self.db.execute(begin or self.dialect.begin_write)
        try:
            yield self.db
            self.db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):  # a lost connection has rolled back already
                self.db.execute("ROLLBACK")
            raise

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self.db.execute(sql, args)]

    def close(self) -> None:
        self.connection.close()


def _family(declared: str) -> str:
    """SQLite's affinity rules, applied to either backend's declared type."""
    kind = declared.upper()
    if "INT" in kind:
        return "integer"
    if any(word in kind for word in ("REAL", "FLOA", "DOUB")):
        return "real"
    return "text"
