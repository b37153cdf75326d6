"""Forward-only schema migrations: plain numbered SQL files, applied in order, each exactly once.
SQLite's are in migrations/ and recorded in its user_version; PostgreSQL's, the same schema in
its dialect, are in migrations/postgres/ under the same numbers and names, and recorded in the
drover_schema table (tests/unit/store/test_migrations.py holds the two sets in step)."""

from __future__ import annotations

import sqlite3
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

# Taken for each migration's transaction, so that two controllers (or a controller and `drover
# store migrate`) starting on one database apply each migration once: an arbitrary constant.
MIGRATION_LOCK = 0x64726F766572  # "drover"


def migration_files(backend: str = "sqlite") -> dict[int, tuple[str, str]]:
    """version → (file name, SQL) of one backend's migrations."""
    folder = resources.files("drover.store") / "migrations"
    if backend == "postgresql":
        folder = folder / "postgres"
    return {int(entry.name[:4]): (entry.name, entry.read_text(encoding="utf-8"))
            for entry in folder.iterdir() if entry.name.endswith(".sql") and entry.name[:4].isdigit()}


def migrations(backend: str = "sqlite") -> list[tuple[int, str]]:
    return sorted((version, sql) for version, (_, sql) in migration_files(backend).items())


def newest_version() -> int:
    return max(migration_files(), default=0)


def _newer_than_known(current: int, newest: int) -> RuntimeError:
    return RuntimeError(f"the database has schema version {current}, newer than this Drover knows ({newest}); "
                        "upgrade Drover")


def migrate_sqlite(connection: sqlite3.Connection, up_to: int | None = None) -> int:
    """Bring the database up to the newest schema (or `up_to`); return the version it is at."""
    current = connection.execute("PRAGMA user_version").fetchone()[0]
    known = migrations()
    newest = known[-1][0] if known else 0
    if current > newest:
        raise _newer_than_known(current, newest)
    for version, sql in known:
        if version <= current or (up_to is not None and version > up_to):
            continue
        with connection:
            connection.executescript(f"BEGIN;\n{sql}\nPRAGMA user_version = {version};\nCOMMIT;")
        current = version
    return int(current)


def sqlite_version(connection: sqlite3.Connection) -> int:
    return int(connection.execute("PRAGMA user_version").fetchone()[0])


def postgres_version(connection: psycopg.Connection[tuple[Any, ...]]) -> int:
    """The schema version of the database (0: no Drover schema yet), without changing it."""
    found = connection.execute("SELECT to_regclass('drover_schema') IS NOT NULL").fetchone()
    if not found or not found[0]:
        return 0
    row = connection.execute("SELECT MAX(version) FROM drover_schema").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def migrate_postgres(connection: psycopg.Connection[tuple[Any, ...]], up_to: int | None = None) -> int:
    """Bring the database up to the newest schema (or `up_to`); return the version it is at. The
    connection is in autocommit mode: each migration is one transaction, DDL included."""
    known = migrations("postgresql")
    newest = known[-1][0] if known else 0
    current = postgres_version(connection)
    if current > newest:
        raise _newer_than_known(current, newest)
    for version, sql in known:
        if version <= current or (up_to is not None and version > up_to):
            continue
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            connection.execute("CREATE TABLE IF NOT EXISTS drover_schema (version BIGINT NOT NULL)")
            current = postgres_version(connection)  # another may have gone first, under the lock
            if version <= current:
                continue
            connection.execute(sql.encode())  # bytes: taken as it is, several statements, no placeholders
            connection.execute("DELETE FROM drover_schema")
            connection.execute("INSERT INTO drover_schema (version) VALUES (%s)", (version,))
        current = version
    return current
