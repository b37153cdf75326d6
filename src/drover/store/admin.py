"""`drover store migrate|check|copy`, for operators: what the CLI may use of the store (an
import-linter contract lets drover.cli.commands.store import this module and no other)."""

from __future__ import annotations

from dataclasses import dataclass

from drover.store.copy import CopyRefused, CopyReport, TableFigures, copy_store, figures
from drover.store.database import Database
from drover.store.migrate import newest_version

__all__ = ["CopyRefused", "CopyReport", "StoreStatus", "TableFigures", "check", "copy_store", "figures", "migrate"]

COUNTED = ("jobs", "tasks", "attempts", "events")


@dataclass(frozen=True, slots=True)
class StoreStatus:
    where: str  # the file, or the URL without its password
    version: int
    newest: int
    counts: dict[str, int]  # empty when the schema is not there yet

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
    """The schema version and what the store holds, without changing anything."""
    database = Database(url, create=False)
    try:
        version = database.version()
        tables = database.tables()
        counts = {table: database.count(table) for table in COUNTED if table in tables}
        return StoreStatus(database.shown, version, newest_version(), counts)
    finally:
        database.close()
