"""What a failing store means to an operator: the cause, the file, and the next step, in one line.

SQLite names its failures (`sqlite_errorname`); each family maps to one cause and one next step.
The controller answers a request it could not commit with this (503, kind "unavailable"), keeps
running, and commits again once the cause is gone; nothing acknowledged is lost, because nothing
is acknowledged before its commit.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from drover.core.errors import Unavailable

P = ParamSpec("P")
R = TypeVar("R")

# SQLite's primary result codes (the part before any "_" extension) → the cause and what to do.
CAUSES = {
    "SQLITE_FULL": ("the disk is full", "free space on its filesystem; Drover goes on by itself"),
    "SQLITE_READONLY": ("it is read-only", "make it and its directory writable by the controller's user"),
    "SQLITE_BUSY": ("another process holds it locked", "stop the other process (a second controller, a sqlite3 shell)"),
    "SQLITE_LOCKED": ("another process holds it locked", "stop the other process (a second controller, a sqlite3 shell)"),
    "SQLITE_CORRUPT": ("it is corrupt", "restore it from a backup, or move it aside to start with an empty cluster"),
    "SQLITE_NOTADB": ("it is not a Drover database", "restore it from a backup, or move it aside to start with an empty cluster"),
    "SQLITE_IOERR": ("the disk fails to read or write it", "check the disk and its filesystem (dmesg)"),
    "SQLITE_CANTOPEN": ("it cannot be opened", "check that its directory exists and the controller's user may write there"),
    "SQLITE_PERM": ("the controller's user may not write it", "make it writable by the controller's user"),
}


class StoreFault(Unavailable):
    """The store cannot do what was asked, for a reason outside Drover (disk, permissions, lock)."""


def fault(path: str, error: sqlite3.Error) -> StoreFault:
    name = getattr(error, "sqlite_errorname", "") or ""
    primary = "_".join(name.split("_")[:2])
    cause, step = CAUSES.get(primary, (str(error), "see the controller's log"))
    if primary in ON_A_READ_ONLY_FILESYSTEM:
        directory = read_only_directory(path)
        if directory is not None:
            cause = f"it is on a read-only filesystem ({directory})"
            step = "remount that filesystem read-write, or give the cluster a state directory on a writable one"
    if cause == str(error):
        return StoreFault(f"the job store {path} failed: {error}; {step}")
    return StoreFault(f"the job store {path} cannot be used: {cause} ({error}); {step}")


# What SQLite says when the file or its directory is on a filesystem mounted read-only: it cannot
# create the file (CANTOPEN), its journal (READONLY, IOERR) or may not write (PERM). The cause an
# operator needs is the mount, which SQLite does not name.
ON_A_READ_ONLY_FILESYSTEM = {"SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "SQLITE_IOERR"}


def read_only_directory(path: str) -> str | None:
    """The directory of the file at `path` if the filesystem it is on is mounted read-only."""
    import os

    directory = os.path.dirname(os.path.abspath(path))
    try:
        return directory if os.statvfs(directory).f_flag & os.ST_RDONLY else None
    except OSError:
        return None


# Failures after which SQLite keeps refusing on the same connection even once the cause is gone
# (a header written over and then restored, a disk that failed and came back): the connection is
# opened again on the next call. Busy, full and read-only stores recover on the same connection.
REOPEN_AFTER = {"SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_IOERR", "SQLITE_CANTOPEN"}


class HasPath(Protocol):
    path: str
    needs_reopen: bool

    def reopen(self) -> None: ...

    def fault(self, error: Exception) -> StoreFault | None:
        """The failure as an operator reads it, or None if it is not the store's (a bug); sets
        needs_reopen when the connection cannot be used again."""


S = TypeVar("S", bound=HasPath)


def translated(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """A store method whose database failures become a StoreFault naming the store."""

    @functools.wraps(method)
    def wrapper(store: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            if store.needs_reopen:
                store.reopen()
                store.needs_reopen = False
            return method(store, *args, **kwargs)
        except Exception as error:
            found = store.fault(error)
            if found is None:
                raise
            raise found from error

    return wrapper


def sqlite_fault(store: HasPath, error: Exception) -> StoreFault | None:
    """SQLite's failures, for SqliteStore.fault and SqliteReader.fault."""
    if not isinstance(error, sqlite3.Error):
        return None
    name = getattr(error, "sqlite_errorname", "") or ""
    if "_".join(name.split("_")[:2]) in REOPEN_AFTER:
        store.needs_reopen = True
    return fault(store.path, error)
