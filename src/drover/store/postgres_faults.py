"""What a failing PostgreSQL store means to an operator, in one line: the cause, the server
(its URL without the password) and the next step, as faults.py says for SQLite.

PostgreSQL names its failures by SQLSTATE; a class (its first two characters) or a code maps
to one cause and one next step. A lost connection is opened again on the store's next call:
nothing was acknowledged that was not committed, so the controller goes on where it was.
"""

from __future__ import annotations

from drover.store.faults import HasPath, StoreFault

# SQLSTATE (a code, or a class of two characters) → the cause and what to do.
CAUSES = {
    "08": ("PostgreSQL cannot be reached", "check that the server runs and accepts connections from this host"),
    "57P": ("PostgreSQL is shutting down or restarting", "Drover goes on once it is back"),
    "53100": ("the server's disk is full", "free space on its filesystem; Drover goes on by itself"),
    "53300": ("the server has too many connections", "raise max_connections, or close other clients"),
    "53": ("the server is out of resources", "see the PostgreSQL server's log"),
    "28": ("the server refused the controller's user or password", "check the user and password in the store URL"),
    "3D000": ("the database does not exist", "create it (createdb), then start the controller again"),
    "42501": ("the store's user may not read or write its tables", "grant the user its tables, or use their owner"),
    "25006": ("the server is read-only (a standby?)", "point the store URL at the primary"),
    "40": ("a concurrent transaction conflicted", "another process writes the same database: stop it"),
}
# Classes after which the connection is not used again: it is opened afresh on the next call.
REOPEN_AFTER = ("08", "57P")


def cause_of(sqlstate: str, connection_lost: bool) -> tuple[str, str] | None:
    if connection_lost and not sqlstate:
        return CAUSES["08"]
    for key in (sqlstate, sqlstate[:3], sqlstate[:2]):
        if key and key in CAUSES:
            return CAUSES[key]
    return None


def postgres_fault(store: HasPath, error: Exception) -> StoreFault | None:
    """A psycopg failure as a StoreFault naming the store (None for anything else); marks the
    store for a new connection when its own is gone."""
    import psycopg

    if not isinstance(error, psycopg.Error):
        return None
    sqlstate = error.sqlstate or ""
    lost = isinstance(error, psycopg.OperationalError)
    if (lost and not sqlstate) or sqlstate.startswith(REOPEN_AFTER):
        store.needs_reopen = True
    return fault(store.path, error, sqlstate, lost)


def fault(where: str, error: Exception, sqlstate: str = "", connection_lost: bool = False) -> StoreFault:
    detail = " ".join(str(error).split())  # libpq's messages run over several lines
    found = cause_of(sqlstate, connection_lost)
    if found is None:
        return StoreFault(f"the job store {where} failed: {detail}; see the PostgreSQL server's log")
    cause, step = found
    return StoreFault(f"the job store {where} cannot be used: {cause} ({detail}); {step}")


def psycopg_missing(where: str) -> StoreFault:
    return StoreFault(f"the job store {where} needs psycopg, which is not installed: "
                      "pip install 'drover[postgres]' (or psycopg[binary]) into Drover's environment")
