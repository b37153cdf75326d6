"""Whether the store's pages are sound: SQLite's own checks, PostgreSQL's amcheck where it is.

A page written over under a running controller (a stray write, a failing disk) goes unseen
until some query reads it: SQLite keeps the pages it read in memory, and a controller that
never reads an old table may run for days on a damaged file. The checks here read every page
from a connection of their own. `drover store check` runs the full one; the controller runs the
quick one when it starts and every `store_check_s` ([controller]), and refuses to write to a
store found damaged (SqlStore.damaged).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from urllib.parse import quote

from drover.store.urls import backend_of, shown, sqlite_path

SHOWN_PROBLEMS = 10  # the first of them, as SQLite lists them: enough to name the damage


@dataclass(frozen=True, slots=True)
class Integrity:
    where: str  # the file, or the URL without its password
    method: str  # what was run: "PRAGMA integrity_check", "amcheck (bt_index_check, 12 indexes)"
    problems: tuple[str, ...] = ()
    skipped: str | None = None  # why nothing was checked, when nothing could be

    @property
    def sound(self) -> bool:
        return not self.problems

    def describe(self) -> str:
        """One line: what was run and what it found."""
        if self.problems:
            return f"{self.method} found damage: " + "; ".join(self.problems)
        if self.skipped:
            return f"not checked: {self.skipped}"
        return f"{self.method}: ok"

    def refusal(self) -> str:
        """What a write to the damaged store is answered, as other store faults are (faults.py)."""
        return (f"the job store {self.where} cannot be used: it is corrupt ({self.describe()}); restore it from a "
                "backup, or move it aside to start with an empty cluster")


def check(url: str, quick: bool = False) -> Integrity:
    """Check the store at `url`, read-only, on a connection of its own. `quick`: SQLite's
    quick_check (every page, not whether each index matches its table: O(N) rather than
    O(N log N)); PostgreSQL's amcheck is the same either way."""
    if backend_of(url) == "sqlite":
        return _sqlite(sqlite_path(url), quick)
    return _postgres(url)


def _sqlite(path: str, quick: bool) -> Integrity:
    method = f"PRAGMA {'quick_check' if quick else 'integrity_check'}"
    try:
        connection = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, isolation_level=None)
    except sqlite3.Error as error:
        return Integrity(path, method, (f"cannot be opened: {error}",))
    try:
        connection.execute("PRAGMA busy_timeout=2000")
        rows = [str(row[0]) for row in connection.execute(f"{method}({SHOWN_PROBLEMS})")]
    except sqlite3.DatabaseError as error:  # a header or schema page so damaged the check cannot run
        rows = [str(error)]
    finally:
        connection.close()
    return Integrity(path, method, tuple(row for row in rows if row != "ok"))


def _postgres(url: str) -> Integrity:
    from drover.store.postgres import connect

    where = shown(url)
    connection = connect(url, "drover-integrity-check", read_only=True)
    try:
        if connection.execute("SELECT 1 FROM pg_extension WHERE extname = 'amcheck'").fetchone() is None:
            return Integrity(where, "amcheck", skipped="the amcheck extension is not installed in the database "
                             "(CREATE EXTENSION amcheck, as a superuser, enables the check); PostgreSQL's own "
                             "checksums (initdb --data-checksums) are the server's")
        indexes = [str(row[0]) for row in connection.execute(
            "SELECT c.oid::regclass::text FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_am a ON a.oid = c.relam JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE a.amname = 'btree' AND n.nspname = current_schema() ORDER BY 1")]
        problems = []
        for index in indexes:
            try:
                connection.execute("SELECT bt_index_check(%s::regclass, true)", (index,))
            except Exception as error:  # psycopg.Error: what amcheck says of that index
                problems.append(f"index {index}: {' '.join(str(error).split())}")
        return Integrity(where, f"amcheck (bt_index_check of {len(indexes)} indexes and their tables)",
                         tuple(problems[:SHOWN_PROBLEMS]))
    finally:
        connection.close()
