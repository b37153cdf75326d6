"""The PostgreSQL store's reader: sql_reader.py's reads on a connection of its own whose
transactions are read-only. Each statement sees what was committed before it started, and
`_snapshot` reads several statements from one snapshot (REPEATABLE READ)."""

from __future__ import annotations

from drover.store.dialect import POSTGRES
from drover.store.faults import StoreFault
from drover.store.postgres import PgDb, connect
from drover.store.postgres_faults import postgres_fault
from drover.store.sql_reader import SqlReader
from drover.store.urls import shown


class PostgresReader(SqlReader):
    dialect = POSTGRES

    def __init__(self, url: str) -> None:
        self.url = url
        self.path = shown(url)
        self.needs_reopen = False
        self.connection = connect(url, "drover-controller-reader", read_only=True)
        self.db = PgDb(self.connection)

    def fault(self, error: Exception) -> StoreFault | None:
        return postgres_fault(self, error)

    def reopen(self) -> None:
        connection = connect(self.url, "drover-controller-reader", read_only=True)
        self.connection.close()
        self.connection = connection
        self.db = PgDb(connection)

    def close(self) -> None:
        self.connection.close()
