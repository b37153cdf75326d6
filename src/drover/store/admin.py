"""`drover store migrate|check|copy`, for operators: what the CLI may use of the store (an
import-linter contract lets drover.cli.commands.store import this module and no other)."""

from __future__ import annotations

from dataclasses import dataclass

from drover.store import integrity
from drover.store.copy import CopyRefused, CopyReport, TableFigures, copy_store, figures
from drover.store.database import Database
from drover.store.integrity import Integrity
from drover.store.migrate import newest_version

__all__ = ["CopyRefused", "CopyReport", "StoreStatus", "TableFigures", "check", "copy_store", "figures", "migrate"]

COUNTED = ("jobs", "tasks", "attempts", "events")


@dataclass(frozen=True, slots=True)
class StoreStatus:
    where: str  # the file, or the URL without its password
    version: int | None  # None when the damage keeps it from being read
    newest: int
    counts: dict[str, int]  # empty when the schema is not there yet
    integrity: Integrity
    unreadable: str | None = None  # why the version or the counts could not be read (a damaged store)

    @property
    def is_current(self) -> bool:
        return self.version == self.newest


def migrate(url: str) -> tuple[int, int]:
    """Bring the store's schema to this Drover's; (version before, version after)."""
    database = Database(url)
    try:
        before = database.version()
        return before, database.migrate()
    finally:
        database.close()


def check(url: str) -> StoreStatus:
    """The schema version, what the store holds and whether its pages are sound (SQLite's
    integrity_check, PostgreSQL's amcheck where installed), without changing anything. A store
    too damaged to read its version or counts is reported with the damage, not as unreachable."""
    database = Database(url, create=False)
    try:
        found = integrity.check(url)
        try:
            version = database.version()
            tables = database.tables()
            counts = {table: database.count(table) for table in COUNTED if table in tables}
        except Exception as error:
            if found.sound:
                raise
            return StoreStatus(database.shown, None, newest_version(), {}, found, " ".join(str(error).split()))
        return StoreStatus(database.shown, version, newest_version(), counts, found)
    finally:
        database.close()
