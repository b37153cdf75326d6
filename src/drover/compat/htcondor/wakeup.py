"""How the event log's follower waits, costing nothing while it waits: it wakes when a request
lands in its hand-over directory (the kernel's inotify reports the rename that puts it there) or
when one of the clusters it follows has ended (its thread says so through a pipe), and otherwise
sleeps in select() for as long as it takes.

The watch is on the directory condor_submit made and checked to be the user's own (handoff.py),
never followed through a symbolic link, and only tells that a name appeared: the requests are
read and checked by handoff.take as before. Where inotify cannot be had (the user's inotify
instances or watches used up, a kernel without it), the follower looks at the directory every
`fallback_s` seconds instead, as it would have without it."""

from __future__ import annotations

import ctypes
import errno
import os
import select

IN_CLOSE_WRITE = 0x00000008  # a file written in place
IN_MOVED_TO = 0x00000080  # a request renamed into place, as handoff.put does
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000


class Wakeup:
    """Waits for a new entry in `path` or a `poke`; `wait` returns once either came."""

    def __init__(self, path: str, fallback_s: float) -> None:
        self._read, self._write = os.pipe()  # both ends close-on-exec
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        self._watch = _watch(path)
        self.fallback_s = fallback_s

    @property
    def watching(self) -> bool:
        """Whether a new request wakes it (else it looks every fallback_s)."""
        return self._watch is not None

    def poke(self) -> None:
        """Wake the waiter (from any thread). A full pipe already will."""
        try:
            os.write(self._write, b".")
        except BlockingIOError:
            pass

    def wait(self) -> None:
        fds = [self._read] if self._watch is None else [self._read, self._watch]
        ready, _, _ = select.select(fds, [], [], None if self._watch is not None else self.fallback_s)
        for fd in ready:
            _drain(fd)

    def close(self) -> None:
        for fd in (self._read, self._write, self._watch):
            if fd is not None:
                os.close(fd)


def _watch(path: str) -> int | None:
    """An inotify descriptor watching `path` for names put there; None where there can be none."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init, add = libc.inotify_init1, libc.inotify_add_watch
    except (OSError, AttributeError):
        return None
    add.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
    fd = int(init(os.O_NONBLOCK | os.O_CLOEXEC))
    if fd < 0:  # EMFILE: the user's inotify instances used up; ENOSYS
        return None
    if add(fd, os.fsencode(path), IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR | IN_DONT_FOLLOW) < 0:
        os.close(fd)  # ENOSPC: the user's watches used up; ENOTDIR: not a directory (a link)
        return None
    return fd


def _drain(fd: int) -> None:
    """Read what is there (the events themselves do not matter: the directory is looked at)."""
    while True:
        try:
            if not os.read(fd, 65536):
                return
        except OSError as error:
            if error.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EINTR):
                return
            raise
