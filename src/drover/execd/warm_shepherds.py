"""Warm shepherds: forked ahead of their orders, so an order costs the fork server one write.

A slot's next attempt used to wait for the fork server's fork and the new process's first steps
(about 2 ms of a 12 ms cycle on a /bin/true job; docs/performance.md). The fork server keeps a
few shepherds forked in advance, each blocked on a pipe of its own; an order is the attempt's
spool directory written to one of them, which then runs the whole sequence (shepherd/main.py)
from its first step, exactly as a shepherd forked for the order would: signals, identity,
containment and everything of the attempt's happen after it has its spool.

What a warm shepherd does before its order is only what does not depend on the attempt, and
changes nothing outside itself: it leaves the collector off, takes a session of its own, sets
the fork server's signal handlers back to their defaults and closes the fork server's
descriptors. It keeps every signal blocked (as a shepherd forked for an order is born with
them blocked, shepherd/signals.py), so nothing sent to it lands before its sequence's first
step, and it reads nothing but its own pipe, whose other end only the fork server holds: the
spool directory comes from the execd through the fork server, never from anything a user
controls. It runs as the fork server does, as every shepherd does today.

A warm shepherd is no job's: nobody but the fork server knows its pid until it is given an
order. When the fork server ends (the execd closed its socket, or the server was killed), the
pipe's write end closes, the warm shepherd reads its end of file and exits; the fork server
waits for those it can (`close`), so a stopped execd leaves none behind.

How many: at most `keep`, which the execd sets to the node's CPU count but never more than
WARM_IDLE_MAX: each is a process holding its copy-on-write pages, and a node whose slots are
all busy has no use for more than the one that starts the next attempt.
"""

from __future__ import annotations

import gc
import os
import signal
from collections.abc import Callable

WARM_IDLE_MAX = 2  # never more warm shepherds idle than this, whatever the node's CPU count


def keep_for(cpus: int) -> int:
    """How many warm shepherds a node of `cpus` CPUs keeps ready."""
    return max(0, min(cpus, WARM_IDLE_MAX))


class WarmShepherds:
    """The fork server's warm shepherds: pid → the write end of the pipe it waits on."""

    def __init__(self, keep: int, run: Callable[[str], int], block_all: Callable[[], set[int]],
                 server_fds: Callable[[], list[int]]) -> None:
        self.keep = keep
        self._run = run
        self._block_all = block_all
        self._server_fds = server_fds  # the fork server's own descriptors, which no shepherd keeps
        self._waiting: dict[int, int] = {}  # pid → write end, oldest first
        self._paused = False  # a fork failed: no more until the next order (no busy loop)

    def short(self) -> bool:
        """Whether fewer than `keep` are waiting (and forking one more is worth a try)."""
        return not self._paused and len(self._waiting) < self.keep

    def write_ends(self) -> list[int]:
        """The pipes' write ends: a shepherd forked for an order closes them, or a warm one
        would wait on after the fork server is gone."""
        return list(self._waiting.values())

    def order(self, spool_dir: str) -> int | None:
        """Hand `spool_dir` to a waiting shepherd; its pid, or None if none is waiting (or none
        of those waiting took it: one that died meanwhile is dropped)."""
        data = (spool_dir + "\n").encode()
        self._paused = False
        while self._waiting:
            pid = next(iter(self._waiting))
            fd = self._waiting.pop(pid)
            try:
                # One write, well under PIPE_BUF: the shepherd reads all of it or nothing.
                written = os.write(fd, data)
            except OSError:  # it died while it waited (EPIPE): the reaper has its status
                written = 0
            finally:
                os.close(fd)
            if written == len(data):
                return pid
        return None

    def top_up(self) -> None:
        """Fork one more warm shepherd, if fewer than `keep` wait. An OSError (no fork) leaves
        the pool as it is: orders are then forked for, as without warm shepherds."""
        if not self.short():
            return
        read_fd, write_fd = os.pipe()
        before = self._block_all()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
            self._paused = True
            return
        if pid == 0:
            self._wait_and_run(read_fd, [write_fd, *self._waiting.values(), *self._server_fds()])
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
        os.close(read_fd)
        self._waiting[pid] = write_fd

    def ended(self, pid: int) -> None:
        """A warm shepherd that was reaped before its order: no longer waiting."""
        fd = self._waiting.pop(pid, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        """End every waiting shepherd (end of file on its pipe) and reap it."""
        waiting, self._waiting = self._waiting, {}
        for fd in waiting.values():
            os.close(fd)
        for pid in waiting:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:  # reaped already by the server's SIGCHLD handling
                pass

    def _wait_and_run(self, read_fd: int, close: list[int]) -> None:
        """The child: the generic set-up, then wait for the order; never returns."""
        code = 127
        try:
            prepare_child(close)
            spool_dir = read_order(read_fd)
            os.close(read_fd)
            code = 0 if spool_dir is None else self._run(spool_dir)
        finally:
            os._exit(code)


def prepare_child(close: list[int]) -> None:
    """What every shepherd forked by the fork server does first, before it knows its attempt."""
    gc.disable()  # shepherds live briefly and make no cycles that matter (forkserver.serve)
    os.setsid()  # no signal meant for the fork server's process group or session reaches it
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)  # the server's; the shepherd sets its own
    for fd in close:
        try:
            os.close(fd)
        except OSError:
            pass


ORDER_MAX = 4096  # a spool directory's path, with its newline, is far shorter


def read_order(fd: int) -> str | None:
    """Block until the fork server writes the attempt's spool directory (one line); None at end
    of file (the fork server is gone) or on anything that is not one whole line."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, ORDER_MAX)
        if not chunk or len(data) + len(chunk) > ORDER_MAX:
            return None
        data += chunk
    line = data[:-1].decode(errors="replace")
    return line if line and "\n" not in line and "\x00" not in line else None
