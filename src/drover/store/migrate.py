"""Forward-only schema migrations: plain numbered SQL files, applied in order, recorded in
SQLite's user_version so each runs exactly once."""

from __future__ import annotations

import sqlite3
from importlib import resources


def migrations() -> list[tuple[int, str]]:
    folder = resources.files("drover.store") / "migrations"
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql") and entry.name[:4].isdigit():
            found.append((int(entry.name[:4]), entry.read_text(encoding="utf-8")))
    return sorted(found)


def migrate_sqlite(connection: sqlite3.Connection) -> int:
    """Bring the database up to the newest schema; return the version it is at."""
    current = connection.execute("PRAGMA user_version").fetchone()[0]
    known = migrations()
    newest = known[-1][0] if known else 0
    if current > newest:
        raise RuntimeError(
            f"the database has schema version {current}, newer than this Drover knows ({newest}); "
            "upgrade Drover"
        )
    for version, sql in known:
        if version <= current:
            continue
        with connection:
            connection.executescript(f"BEGIN;\n{sql}\nPRAGMA user_version = {version};\nCOMMIT;")
        current = version
    return int(current)
