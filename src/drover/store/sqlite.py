"""The SQLite store: one file, WAL mode, one transaction per batch of changes.

Durability: every commit is in the WAL before the caller is answered. With the default
`synchronous=NORMAL`, a committed change survives the controller being killed at any instant;
it may not survive the machine losing power before the next checkpoint. `synchronous=FULL`
(store option) survives that too, at about a tenth of the commit rate (see MEASUREMENTS.md).

The queries themselves are sql_store.py's, shared with the PostgreSQL store.
"""

from __future__ import annotations

import os
import sqlite3

from drover.store.dialect import SQLITE
from drover.store.faults import StoreFault, sqlite_fault
from drover.store.migrate import migrate_sqlite
from drover.store.rows import JOB_COLUMNS, attempt_from_row, job_from_row
from drover.store.sql_store import Db, SqlStore, events_of, tasks_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.store.sqlite_reader import SqliteReader

# Re-exported: what the reader and older callers import from here.
__all__ = ["JOB_COLUMNS", "SqliteStore", "attempt_from_row", "connect", "events_of", "job_from_row", "tasks_of"]


def connect(target: str, uri: bool, *pragmas: str) -> sqlite3.Connection:
    """A connection in autocommit mode with `pragmas` set, closed again if one fails.
    check_same_thread is off: whoever stops a reading thread may close its connection."""
    db = sqlite3.connect(target, uri=uri, isolation_level=None, check_same_thread=False)
    try:
        for pragma in pragmas:
            db.execute(f"PRAGMA {pragma}")
    except BaseException:
        db.close()
        raise
    return db


class SqliteStore(SqlStore):
    dialect = SQLITE

    def __init__(self, path: str, synchronous: str = "NORMAL") -> None:
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        self.path = path
        self.synchronous = synchronous
        self.needs_reopen = False  # see store/faults.py: set after a failure that poisons the connection
        self.sqlite = self._connect()
        self.db: Db = self.sqlite
        self.schema_version = migrate_sqlite(self.sqlite)
        super().__init__()

    def _connect(self) -> sqlite3.Connection:
        # A writer that finds the database locked (a backup, a sqlite3 shell) waits busy_timeout
        # before the request is answered 503 with the cause; it never waits unboundedly.
        return connect(self.path, False, "journal_mode=WAL", f"synchronous={self.synchronous}", "foreign_keys=OFF",
                       "busy_timeout=2000")

    def fault(self, error: Exception) -> StoreFault | None:
        return sqlite_fault(self, error)

    def reopen(self) -> None:
        """A new connection to the same file, once the old one failed in a way it keeps (a
        corrupt header restored from a backup). Nothing was committed meanwhile: the event
        sequence goes on from the store's."""
        db = self._connect()
        self.sqlite.close()
        self.sqlite = db
        self.db = db
        self._last_seq = self._newest_seq()

    def _rollback(self) -> None:
        if self.sqlite.in_transaction:  # a failed COMMIT may have rolled back already
            self.sqlite.execute("ROLLBACK")

    def close(self) -> None:
        self.sqlite.close()

    def reader(self) -> SqliteReader:
        """A read-only connection to the same file, for the calling thread alone."""
        from drover.store.sqlite_reader import SqliteReader

        return SqliteReader(self.path)
