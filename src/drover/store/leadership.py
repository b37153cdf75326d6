"""Which controller is the active one, when several share one PostgreSQL store.

The active controller holds a session-level advisory lock on the very connection it commits on.
A session's advisory lock ends only with the session, so every commit that reaches the server
proves the lock is still held: a controller whose session was ended (its connection cut, its
backend terminated, the server restarted) cannot commit anything more, hence cannot acknowledge
a request or dispatch a job (every start is committed before its order is sent). A standby
waits for the lock on a connection of its own, blocked in the server, and is granted it the
moment the holder's session ends.

Beside the lock, one row in `drover_leader` says who holds it (the address clients and nodes
reach it at, the backend that holds the lock) and the leadership's epoch, raised by each new
holder. A controller that lost its connection may take the lock again only if the epoch is
still its own: otherwise another controller was active in between, and what this one keeps in
memory is out of date.

The table is Drover's bookkeeping, made by the first holder (the only writer), not part of the
job schema: `drover store copy` leaves it out (database.BOOKKEEPING).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from drover.store.faults import StoreFault

if TYPE_CHECKING:
    import psycopg

    Connection = psycopg.Connection[tuple[Any, ...]]

# pg_advisory_lock(classid, objid): the class is Drover's ("drov"), the object the leadership.
# Advisory locks belong to one database, so each cluster's database has its own leadership.
LOCK_CLASS = 0x64726F76
LOCK_OBJECT = 1
LOCK_ARGS = (LOCK_CLASS, LOCK_OBJECT)
# A holder whose host vanished (power lost, cable pulled) leaves its session open until the
# server's TCP keepalives find the peer gone: two hours by default. The holder asks its server
# session to probe after 5 s of silence, every 2 s, 3 times, and to give up on unacknowledged
# data after 15 s, so that a standby takes over in about 15 s instead. (Ignored on a Unix socket,
# where a dead peer is seen at once.)
SESSION_TIMEOUTS = (("tcp_keepalives_idle", "5"), ("tcp_keepalives_interval", "2"),
                    ("tcp_keepalives_count", "3"), ("tcp_user_timeout", "15000"))

CREATE_TABLE = """CREATE TABLE IF NOT EXISTS drover_leader (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    epoch BIGINT NOT NULL,
    address TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    backend_pid INTEGER NOT NULL,
    since DOUBLE PRECISION NOT NULL
)"""
# The holder's row, if its backend still holds the lock: after a holder died, the row names it
# until the next one takes over, and naming a dead controller would send clients nowhere.
ACTIVE = """SELECT l.address, l.epoch FROM drover_leader l JOIN pg_locks k ON k.pid = l.backend_pid
    WHERE k.locktype = 'advisory' AND k.granted AND k.database = (SELECT oid FROM pg_database
    WHERE datname = current_database()) AND k.classid = %s AND k.objid = %s AND k.objsubid = 2"""


class LeadershipLost(StoreFault):
    """This controller is no longer the active one: it must not commit, dispatch or answer again.
    A request it refuses so is answered as a standby answers (naming no one: it does not know
    the next active controller yet): nothing of it was committed, so a client with several
    addresses sends it on to the others, as it does from a standby."""

    kind = "standby"


@dataclass(frozen=True, slots=True)
class Holder:
    """The active controller as the store names it."""

    address: str
    epoch: int


def prepare_session(connection: Connection) -> None:
    """The server-side timeouts that free a dead holder's lock in seconds (SESSION_TIMEOUTS)."""
    for name, value in SESSION_TIMEOUTS:
        connection.execute("SELECT set_config(%s, %s, false)", (name, value))


def acquire(connection: Connection, address: str) -> int:
    """Wait (blocked in the server) until this session holds the lock, then record this
    controller as the holder under a new epoch, which is returned."""
    prepare_session(connection)
    connection.execute("SELECT pg_advisory_lock(%s, %s)", LOCK_ARGS)
    return _record(connection, address)


def retake(connection: Connection, address: str, epoch: int) -> None:
    """On a new connection of a controller that was active in `epoch`: hold the lock again, or
    raise LeadershipLost if another controller holds it or held it since."""
    prepare_session(connection)
    row = connection.execute("SELECT pg_try_advisory_lock(%s, %s)", LOCK_ARGS).fetchone()
    if not row or not row[0]:
        holder = active(connection)
        raise LeadershipLost(f"another controller ({holder.address if holder else 'unknown'}) holds the "
                             "leadership now; this one stops")
    current = _epoch(connection)
    if current != epoch:
        connection.execute("SELECT pg_advisory_unlock(%s, %s)", LOCK_ARGS)
        raise LeadershipLost(f"another controller was active while this one was cut off (epoch {epoch} → "
                             f"{current}); this one stops, and what it knew is out of date")
    _record(connection, address, epoch)


def active(connection: Connection) -> Holder | None:
    """The controller that holds the lock now, if the store names one."""
    found = connection.execute("SELECT to_regclass('drover_leader') IS NOT NULL").fetchone()
    if not found or not found[0]:
        return None
    row = connection.execute(ACTIVE, LOCK_ARGS).fetchone()
    return Holder(str(row[0]), int(row[1])) if row else None


def _epoch(connection: Connection) -> int:
    connection.execute(CREATE_TABLE)
    row = connection.execute("SELECT epoch FROM drover_leader WHERE id = 1").fetchone()
    return int(row[0]) if row else 0


def _record(connection: Connection, address: str, epoch: int | None = None) -> int:
    """Write this holder's row; a new epoch unless `epoch` is given (the same leadership, on a
    new connection). Only the lock's holder writes it, so no two writers race."""
    connection.execute(CREATE_TABLE)
    new_epoch = _epoch(connection) + 1 if epoch is None else epoch
    connection.execute(
        "INSERT INTO drover_leader (id, epoch, address, host, pid, backend_pid, since) "
        "VALUES (1, %s, %s, %s, %s, pg_backend_pid(), %s) ON CONFLICT (id) DO UPDATE SET epoch = EXCLUDED.epoch, "
        "address = EXCLUDED.address, host = EXCLUDED.host, pid = EXCLUDED.pid, backend_pid = EXCLUDED.backend_pid, "
        "since = EXCLUDED.since",
        (new_epoch, address, socket.gethostname(), os.getpid(), time.time()))
    return new_epoch


class Leadership:
    """One controller's side of the leadership: the address it advertises, the epoch it holds,
    and, once lost, why (every later attempt to use the store raises it again, without asking
    the server: a controller that lost the leadership never gets it back in this process)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.epoch = 0
        self.lost: LeadershipLost | None = None
        self._waiting: Connection | None = None

    def take(self, connection: Connection) -> None:
        """Block until `connection`'s session holds the lock (`cancel` ends the wait)."""
        self._waiting = connection
        try:
            self.epoch = acquire(connection, self.address)
        finally:
            self._waiting = None

    def take_again(self, connection: Connection) -> None:
        """The lock again on a new connection, in the same epoch, or LeadershipLost."""
        if self.lost is not None:
            raise self.lost
        try:
            retake(connection, self.address, self.epoch)
        except LeadershipLost as lost:
            self.lost = lost
            raise

    def cancel(self) -> None:
        """End a `take` that waits (from another thread): the controller is stopping."""
        waiting = self._waiting
        if waiting is not None:
            waiting.cancel_safe(timeout=5)
