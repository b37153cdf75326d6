"""Reserves of ended attempts, kept for the next ones (``<spool root>/reserves.d/``).

Each attempt's spool gets a `reserve` of 256 KiB before its shepherd starts (spool/outcome.py).
Allocating it, then freeing it with the spool, cost the execd about 55 us of CPU an attempt on
tmpfs; moving a whole one out of a spool that is being removed, and into the next attempt's, two
renames and a look at its size, about 15. The room kept is the same: a reserve is taken back only
while it is whole (its size, and as many blocks allocated), and the shepherd never writes in it:
it only gives it back (unlinks it) when the disk is full, and then there is none to keep.

At most KEPT wait here, the node daemon's own (mode 0600, in a directory of its own, 0700). A
daemon killed between the renames leaves a reserve here, or none in a spool being removed,
which needs none any more; the next one takes those it finds, and a stopped node removes them
with its spool (`close`).
"""

from __future__ import annotations

import contextlib
import os
import stat

from drover.spool import layout
from drover.spool.outcome import RESERVE_BYTES

DIRECTORY = "reserves.d"  # under the spool root: not an attempt's name (no digit first)
KEPT = 4  # a node's slots end about as many attempts as they start: a few cover the overlap


class SpareReserves:
    """The reserves waiting under one spool root, by name (each the attempt's it came from)."""

    def __init__(self, root: str) -> None:
        self.directory = os.path.join(root, DIRECTORY)
        try:
            self._names = [entry.name for entry in os.scandir(self.directory)
                           if entry.is_file(follow_symlinks=False) and layout.is_attempt_name(entry.name)]
            self._made = True
        except FileNotFoundError:
            self._names, self._made = [], False

    def __len__(self) -> int:
        return len(self._names)

    def take(self, spool: layout.SpoolDir) -> bool:
        """Move a spare into `spool` as its reserve; False where there is none (or it went)."""
        while self._names:
            name = self._names.pop()
            try:
                os.rename(os.path.join(self.directory, name), spool.record(layout.RESERVE))
                return True
            except FileNotFoundError:
                continue  # removed by hand: another one, or none
        return False

    def keep(self, spool_path: str, name: str) -> bool:
        """Move the reserve of the attempt `name`, whose spool at `spool_path` is being removed,
        here for a next attempt, if it is whole and fewer than KEPT wait; True if it was moved."""
        if len(self._names) >= KEPT:
            return False
        reserve = os.path.join(spool_path, layout.RESERVE)
        try:
            info = os.lstat(reserve)
            if (not stat.S_ISREG(info.st_mode) or info.st_size != RESERVE_BYTES
                    or info.st_blocks * 512 < RESERVE_BYTES):
                return False  # cut short, or on a file system that does not keep its blocks
            if not self._made:
                os.makedirs(self.directory, mode=0o700, exist_ok=True)
                self._made = True
            os.rename(reserve, os.path.join(self.directory, name))
        except OSError:
            return False  # given back by the shepherd, or no room for the directory: it goes with the spool
        self._names.append(name)
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
