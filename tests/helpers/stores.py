"""A store's database without the store, for tests of either backend: migrated to a chosen
version and written row by row, with the `?` placeholders the shared queries use."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from typing import Any

from drover.store.dialect import POSTGRES, SQLITE, Dialect
from drover.store.migrate import migrate_postgres, migrate_sqlite, postgres_version, sqlite_version
from drover.store.sql_store import Db
from drover.store.urls import backend_of, sqlite_path


class RawDatabase:
    def __init__(self, url: str) -> None:
        self.backend = backend_of(url)
        self.dialect: Dialect = SQLITE if self.backend == "sqlite" else POSTGRES
        self.connection: Any
        self.db: Db
        if self.backend == "sqlite":
            self.connection = sqlite3.connect(sqlite_path(url), isolation_level=None)
            self.db = self.connection
        else:
            from drover.store.postgres import PgDb, connect

            self.connection = connect(url, "drover-tests")
            self.db = PgDb(self.connection)

    def migrate(self, up_to: int | None = None) -> int:
        if self.backend == "sqlite":
            return migrate_sqlite(self.connection, up_to)
        return migrate_postgres(self.connection, up_to)

    def version(self) -> int:
        if self.backend == "sqlite":
            return sqlite_version(self.connection)
        return postgres_version(self.connection)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Db]:
        self.db.execute(self.dialect.begin_write)
        try:
            yield self.db
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def rows(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self.db.execute(sql, args)]

    def close(self) -> None:
        self.connection.close()
