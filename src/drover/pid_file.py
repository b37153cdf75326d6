"""A daemon's pid file, written by the daemon itself while it holds the file's lock.

Two starters at once (`drover up` and a `drover submit` that starts the cluster) each spawn a
controller and an execd; only one of each may run. The daemon that takes the lock (flock, held
for its life and let go by the kernel when it dies, however it dies) runs, and writes its pid
under it: the pid file names the daemon that runs, never one that gave up. The others exit
with ALREADY_RUNNING, which the starters take as "one runs": they wait for it instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import os

ALREADY_RUNNING = 3  # the exit status of a daemon that found another holding its pid file


class Claimed:
    """The lock on a pid file, held until `release` (or the process's end)."""

    def __init__(self, path: str, fd: int) -> None:
        self.path, self._fd = path, fd

    def release(self) -> None:
        """Remove the pid file (it is this process's), then let the lock go."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.close(self._fd)


def claim(path: str) -> Claimed | None:
    """Lock the pid file at `path` and write this process's pid in it; None if another process
    holds it. A file unlinked between our open and our lock (its daemon was ending) is not the
    one at `path`: then the new one is locked instead."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            current = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            current = None
        if current is None or current.st_ino != os.fstat(fd).st_ino:
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return Claimed(path, fd)
