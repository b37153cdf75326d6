"""The SQLite store's reader: sql_reader.py's reads on a read-only connection to the file.
In WAL mode a reader sees every transaction committed before its statement starts and never
blocks the writer."""

from __future__ import annotations

import sqlite3
from urllib.parse import quote

from drover.store.dialect import SQLITE
from drover.store.faults import StoreFault, fault, sqlite_fault
from drover.store.sql_reader import SqlReader
from drover.store.sql_store import Db
from drover.store.sqlite import connect


class SqliteReader(SqlReader):
    dialect = SQLITE

    def __init__(self, path: str) -> None:
        self.path = path
        self.needs_reopen = False  # see store/faults.py
        try:
            self.sqlite = self._connect()
        except sqlite3.Error as error:
            raise fault(path, error) from error
        self.db: Db = self.sqlite

    def _connect(self) -> sqlite3.Connection:
        # mode=ro: this connection cannot write, whatever a bug asks of it.
        return connect(f"file:{quote(self.path)}?mode=ro", True, "query_only=ON", "busy_timeout=2000")

    def fault(self, error: Exception) -> StoreFault | None:
        return sqlite_fault(self, error)

    def reopen(self) -> None:
        db = self._connect()
        self.sqlite.close()
        self.sqlite = self.db = db

    def close(self) -> None:
        self.sqlite.close()
