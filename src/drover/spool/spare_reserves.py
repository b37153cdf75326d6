"""Reserves of ended attempts, kept for the next ones (``<spool root>/reserves.d/``).

Each attempt's spool gets a `reserve` of 256 KiB before its shepherd starts (spool/outcome.py).
Allocating it, then freeing it with the spool, cost the execd about 55 us of CPU an attempt on
tmpfs; moving a whole one out of a spool that is being removed, and into the next attempt's, two
renames and a look at its size, about 15. The room kept is the same: a reserve is taken back only
while it is whole (its size, and as many blocks allocated), and the shepherd never writes in it:
it only gives it back (unlinks it) when the disk is full, and then there is none to keep.

At most KEPT wait here, the node daemon's own (mode 0600, in a directory of its own, 0700, made
and checked without following a link: spool/own_directory.py). Only a regular file of the
daemon's own with one name is kept or taken: a reserve with a second name elsewhere (a hard
link) would keep its blocks when the shepherd gives it back. A reserve is taken only where the
spool's file system still has the room a new one needs: on a nearly full disk the attempt is
refused as the node's fault, as where the reserve is allocated (spool/outcome.py), rather than
started to have its shepherd's first records fail for the job. A rename that fails for any
reason falls back to allocating.

A daemon killed between the renames leaves a reserve here, or none in a spool being removed,
which needs none any more; the next one takes those it finds, and a stopped node removes them
with its spool (`close`). A node daemon of a release before these leaves the directory alone:
it is a few reserves, removed by the next daemon of this release that stops.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat

from drover.spool import layout
from drover.spool.outcome import RESERVE_BYTES
from drover.spool.own_directory import UnsafeDirectory, own_directory

log = logging.getLogger("drover.spool")

DIRECTORY = "reserves.d"  # under the spool root: not an attempt's name (no digit first)
KEPT = 4  # a node's slots end about as many attempts as they start: a few cover the overlap


class SpareReserves:
    """The reserves waiting under one spool root, by name (each the attempt's it came from)."""

    def __init__(self, root: str) -> None:
        self.directory = os.path.join(root, DIRECTORY)
        self._names: list[str] = []
        self._made = self._usable = False
        if not os.path.lexists(self.directory):
            self._usable = True  # made at the first reserve kept
            return
        try:
            if not self._own_directory():
                return
            with os.scandir(self.directory) as listing:
                self._names = [entry.name for entry in listing
                               if layout.is_attempt_name(entry.name) and _whole(entry.stat(follow_symlinks=False))]
        except OSError as error:  # none taken: each attempt's is allocated, as without spares
            log.warning("spare reserves in %s are not taken: %s", self.directory, error.strerror or error)
            self._names, self._usable = [], False

    def __len__(self) -> int:
        return len(self._names)

    def take(self, spool: layout.SpoolDir) -> bool:
        """Move a spare into `spool` as its reserve; False where there is none (or it went)."""
        if not self._names or not _room_for_a_reserve(spool.path):
            return False  # none; or the disk is nearly full, and allocating one says so
        while self._names:
            name = self._names.pop()
            try:
                os.rename(os.path.join(self.directory, name), spool.record(layout.RESERVE))
                return True
            except FileNotFoundError:
                continue  # removed by hand: another one, or none
            except OSError as error:
                log.warning("cannot take the spare reserve %s: %s", name, error.strerror or error)
                return False  # allocated instead
        return False

    def keep(self, spool_path: str, name: str) -> bool:
        """Move the reserve of the attempt `name`, whose spool at `spool_path` is being removed,
        here for a next attempt, if it is whole and fewer than KEPT wait; True if it was moved."""
        if len(self._names) >= KEPT or not self._usable:
            return False
        reserve = os.path.join(spool_path, layout.RESERVE)
        try:
            if not _whole(os.lstat(reserve)):
                return False  # cut short, on a file system that does not keep its blocks, or not ours alone
            if not self._made and not self._own_directory():
                return False
            os.rename(reserve, os.path.join(self.directory, name))
        except OSError:
            return False  # given back by the shepherd, or no room for the directory: it goes with the spool
        self._names.append(name)
        return True

    def _own_directory(self) -> bool:
        """Make or check the directory, a real one of this process's user that no one else may
        write in; a link or someone else's is refused (and said), and no spare is kept."""
        try:
            own_directory(self.directory, 0o700, set_mode=True)
        except UnsafeDirectory as error:
            log.warning("spare reserves are not kept: %s", error)
            self._usable = False
            return False
        self._made = self._usable = True
        return True

    def close(self) -> None:
        """Remove every spare, and the directory: a stopped node leaves none behind."""
        for name in self._names:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(self.directory, name))
        self._names = []
        if self._made:
            with contextlib.suppress(OSError):
                os.rmdir(self.directory)
            self._made = False


def _whole(info: os.stat_result) -> bool:
    """A reserve that still holds its room, and only through this name: a regular file of this
    process's user, one link, its size, and as many blocks allocated."""
    return (stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and info.st_uid == os.geteuid()
            and info.st_size == RESERVE_BYTES and info.st_blocks * 512 >= RESERVE_BYTES)


def _room_for_a_reserve(path: str) -> bool:
    """Whether the file system of `path` has room for a reserve, as allocating one would find it
    (root may use the blocks kept for it; others may not)."""
    try:
        fs = os.statvfs(path)
    except OSError:
        return False  # allocating says what is wrong
    free = fs.f_bfree if os.geteuid() == 0 else fs.f_bavail
    return free * fs.f_frsize >= RESERVE_BYTES
