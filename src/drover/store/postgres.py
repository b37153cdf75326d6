"""The PostgreSQL store: the same tables, queries and commit semantic as the SQLite store, on a
server several hosts can reach and operators already back up.

One transaction per `commit(changes)`, committed (with the server's default synchronous_commit,
flushed to its WAL) before the caller is answered. The controller is the one writer: it numbers
events itself, as with SQLite. psycopg is imported when a store is opened, never at import, so
the `drover` command's start-up does not pay for it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from drover.store.dialect import POSTGRES, to_format_style
from drover.store.faults import StoreFault, translated
from drover.store.migrate import migrate_postgres
from drover.store.postgres_faults import fault, postgres_fault, psycopg_missing
from drover.store.sql_store import Cursor, SqlStore
from drover.store.urls import shown

if TYPE_CHECKING:
    import psycopg

    from drover.store.leadership import Leadership
    from drover.store.postgres_reader import PostgresReader

    Connection = psycopg.Connection[tuple[Any, ...]]


class PgDb:
    """A psycopg connection that takes the shared queries' `?` placeholders."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        if not parameters:
            return self.connection.execute(sql)
        return self.connection.execute(to_format_style(sql), parameters)

    def executemany(self, sql: str, parameters: Any, /) -> None:
        # psycopg sends the rows in one pipeline: one round trip, not one per row.
        with self.connection.cursor() as cursor:
            cursor.executemany(to_format_style(sql), parameters)

    def __iter__(self) -> Iterator[Any]:  # not a cursor: only here so that a misuse fails loudly
        raise TypeError("PgDb is a connection; iterate over what execute() returns")


def connect(url: str, application_name: str, read_only: bool = False) -> Connection:
    """A connection in autocommit mode (transactions are begun by statements, as with SQLite),
    or a StoreFault that says why there is none."""
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict, make_conninfo
        from psycopg.types.numeric import FloatLoader
    except ImportError:
        raise psycopg_missing(shown(url)) from None
    try:
        given = conninfo_to_dict(url)
        # A server that does not answer is an error after 10 s, not a hang; the URL may say otherwise.
        defaults = {"application_name": application_name, "connect_timeout": "10"}
        connection = psycopg.connect(make_conninfo(url, **{k: v for k, v in defaults.items() if k not in given}),
                                     autocommit=True)
    except psycopg.Error as error:
        raise fault(shown(url), error, error.sqlstate or "", isinstance(error, psycopg.OperationalError)) from None
    # Numbers the queries compute as numeric (an average, a sum of integers) are floats to the
    # domain, as SQLite gives them.
    connection.adapters.register_loader("numeric", FloatLoader)
    zone = local_time_zone()
    try:
        if zone:  # "the local day" of a summary is the controller's, as SQLite's 'localtime' is
            connection.execute("SELECT set_config('TimeZone', %s, false)", (zone,))
        if read_only:
            connection.execute("SET default_transaction_read_only = on")
    except psycopg.Error as error:
        connection.close()
        raise fault(shown(url), error, error.sqlstate or "") from None
    return connection


def local_time_zone() -> str | None:
    """This host's time zone by name (TZ, else /etc/localtime's target), or None if unknown."""
    zone = os.environ.get("TZ", "").lstrip(":")
    if zone and not zone.startswith("/"):
        return zone
    target = os.path.realpath(zone or "/etc/localtime")
    if "/zoneinfo/" in target:
        return target.split("/zoneinfo/", 1)[1].removeprefix("posix/").removeprefix("right/")
    return None


class PostgresStore(SqlStore):
    dialect = POSTGRES

    def __init__(self, url: str, leadership: Leadership | None = None) -> None:
        """`leadership`: first wait until this connection holds the active controller's lock
        (store/leadership.py), and keep it on every new connection; only then is the schema
        migrated and the store read (the newest event number included), so that what is read
        is what the previous active controller left."""
        self.url = url
        self.path = shown(url)
        self.needs_reopen = False
        self.leadership = leadership
        self.connection = connect(url, "drover-controller")
        self.db = PgDb(self.connection)
        try:
            if leadership is not None:
                leadership.take(self.connection)
            self.schema_version = migrate_postgres(self.connection)
            super().__init__()
        except Exception as error:
            self.connection.close()
            found = self.fault(error)
            if found is None:
                raise
            raise found from error

    def fault(self, error: Exception) -> StoreFault | None:
        return postgres_fault(self, error)

    def _batched(self) -> contextlib.AbstractContextManager[object]:
        """psycopg's pipeline mode: BEGIN, every statement of the transaction and COMMIT go to the
        server together and their results come back together, so a commit costs one round trip
        however many tables it writes (a job's end writes five), not one per statement. A read
        inside (an attempt's cleanup record) sends what is queued and waits for its answer."""
        return self.connection.pipeline()

    def reopen(self) -> None:
        """A new connection once the old one was lost (a server restart, a network cut).
        Nothing was acknowledged that was not committed; the event numbers go on from the
        store's, whether or not the last commit reached it."""
        if self.leadership is not None and self.leadership.lost is not None:
            raise self.leadership.lost  # never the lock again in this process
        connection = connect(self.url, "drover-controller")
        if self.leadership is not None:
            try:
                self.leadership.take_again(connection)
            except BaseException:
                connection.close()
                raise
        self.connection.close()
        self.connection = connection
        self.db = PgDb(connection)
        self._last_seq = self._newest_seq()

    @translated
    def check(self) -> None:
        """One round trip on the store's connection: a lost connection shows here (and is opened
        again, the leadership retaken, on the next call) rather than on the next commit."""
        self.db.execute("SELECT 1")

    def _rollback(self) -> None:
        import psycopg

        if self.connection.broken or self.connection.closed:
            return  # the server rolled the transaction back with the connection
        try:
            self.connection.execute("ROLLBACK")
        except psycopg.Error:
            self.needs_reopen = True  # the failure being raised says why

    def close(self) -> None:
        self.connection.close()

    def reader(self) -> PostgresReader:
        """A read-only connection of its own, for the calling thread alone."""
        from drover.store.postgres_reader import PostgresReader

        return PostgresReader(self.url)
