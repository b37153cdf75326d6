"""Warm shepherds: forked ahead of their orders, so an order costs the fork server one write.

A slot's next attempt used to wait for the fork server's fork and the new process's first steps
(about 2 ms of a 12 ms cycle on a /bin/true job; docs/performance.md). The fork server keeps a
few shepherds forked in advance, each blocked on a socket of its own; an order is the attempt's
spool directory sent to one of them, which then runs the whole sequence (shepherd/main.py)
from its first step, exactly as a shepherd forked for the order would: signals, identity,
containment and everything of the attempt's happen after it has its spool.

What a warm shepherd does before its order is only what does not depend on the attempt, and
changes nothing outside itself: it leaves the collector off, takes a session of its own, sets
the fork server's signal handlers back to their defaults and closes the fork server's
descriptors, and goes to /. It keeps every signal blocked (as a shepherd forked for an order is born with
them blocked, shepherd/signals.py), so nothing sent to it lands before its sequence's first
step, and it reads nothing but its own socket, whose other end only the fork server holds: the
spool directory comes from the execd through the fork server, never from anything a user
controls. It runs as the fork server does, as every shepherd does today.

A warm shepherd is no job's: nobody but the fork server knows its pid until it is given an
order. When the fork server ends (the execd closed its socket, or the server was killed), its
end of the socket closes, the warm shepherd reads its end of file and exits; the fork server
waits for those it can (`close`), so a stopped execd leaves none behind.

A shepherd serves again. An attempt ordered with a lifeline (the write end of a pipe whose
read end the execd watches) ends for the execd when its shepherd closes that lifeline, after its
records are written, or dies. The shepherd then need not exit: if it is exactly as it was
before its first attempt (shepherd_state.py checks, it does not trust), it tells the fork server
it is idle and waits for another order on the same socket. The fork server offers it again only
once the execd has released it too (it has seen the attempt's end and forgotten the pid as that
attempt's, so it sends no other signal for it), and once the shepherd has dropped every signal
pending in it then: none meant for one attempt reaches the next. Its copy-on-
write pages are its own by then: an attempt costs it about 1.5 ms of CPU, where a forked
shepherd's first touch of the pages it shares with the fork server cost 5 to 6 ms more
(docs/performance.md). An order without a lifeline (a parallel task's) is served once, and its
shepherd exits, as every shepherd did before.

How many: at most `keep` wait idle, which the execd sets to the node's CPU count but never more than
WARM_IDLE_MAX: each is a process holding its copy-on-write pages, and a node whose slots are
all busy has no use for more than the one that starts the next attempt.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from drover.execd.shepherd_state import Fitness
from drover.open_files import set_soft_limit

WARM_IDLE_MAX = 2  # never more warm shepherds idle than this, whatever the node's CPU count
IDLE = b"IDLE"  # what a shepherd that served its attempt says when it can serve another
FLUSH = b"FLUSH"  # the server to it, once the execd released it: drop what signals wait
READY = b"READY"  # its answer: nothing of the attempt before is pending, it waits for an order
# Shepherds coming back from an attempt may wait beside the `keep` forked ahead, up to this many
# times `keep`: the next order takes the one that came back last, and the others are not
# forked again for nothing (a node's slots end their attempts about as often as they start one).
IDLE_AFTER_SERVING = 2
RETURN_WAIT_S = 0.5  # how long an order waits for released shepherds to come back, at most


def keep_for(cpus: int) -> int:
    """How many warm shepherds a node of `cpus` CPUs keeps ready."""
    return max(0, min(cpus, WARM_IDLE_MAX))


@dataclass(frozen=True, slots=True)
class ShepherdCalls:
    """What a warm shepherd calls of the shepherd's modules, which the fork server imported."""

    run: Callable[[str], int]  # shepherd.main.run: the attempt's whole sequence
    block_all: Callable[[], set[int]]  # shepherd.signals.block_all
    discard_pending: Callable[[], int]  # shepherd.signals.discard_pending


@dataclass(slots=True)
class Serving:
    """A shepherd given an order with a lifeline: it may come back for another."""

    channel: socket.socket
    idle: bool = False  # it said it can serve another
    released: bool = False  # the execd has seen its attempt end (and sent its last signal for it)
    flushed: bool = False  # told to drop what signals wait, once both of the above
    late: bool = False  # an order waited for it to come back, in vain: no other one waits for it


class WarmShepherds:
    """The fork server's warm shepherds: those waiting for an order, and those serving one that
    may come back."""

    def __init__(self, keep: int, calls: ShepherdCalls, server_fds: Callable[[], list[int]],
                 watch: Callable[[socket.socket, int], object], unwatch: Callable[[socket.socket], object],
                 open_files: int | None = None) -> None:
        self.keep = keep
        self._open_files = open_files  # the soft limit a shepherd gets back (open_files.py); None: as it is
        self._calls = calls
        self._server_fds = server_fds  # the fork server's own descriptors, which no shepherd keeps
        self._watch, self._unwatch = watch, unwatch  # the server's selector, for `heard`
        self._waiting: dict[int, socket.socket] = {}  # pid → its channel, oldest first
        self._serving: dict[int, Serving] = {}
        self._paused = False  # a fork failed: no more until the next order (no busy loop)

    def short(self) -> bool:
        """Whether fewer than `keep` are waiting or on their way back (and forking one more is
        worth a try)."""
        coming = sum(1 for serving in self._serving.values() if serving.idle or serving.released)
        return not self._paused and len(self._waiting) + coming < self.keep

    def channel_fds(self) -> list[int]:
        """Every channel's descriptor: a shepherd forked for an order closes them, or one of
        them would not see the fork server go."""
        return [channel.fileno() for channel in self._waiting.values()] + [
            serving.channel.fileno() for serving in self._serving.values()]

    def order(self, spool_dir: str, lifeline: int | None = None) -> int | None:
        """Hand `spool_dir` (and its lifeline, if any) to a waiting shepherd, the one that
        waited least (its pages are the warmest); its pid, or None if none is waiting (or none
        of those waiting took it: one that died meanwhile is dropped)."""
        data = spool_dir.encode()
        self._paused = False
        if not self._waiting:
            self._await_return()
        while self._waiting:
            pid = next(reversed(self._waiting))
            channel = self._waiting.pop(pid)
            try:
                # One datagram: the shepherd reads all of it or nothing.
                if lifeline is None:
                    sent = channel.send(data)
                else:
                    sent = socket.send_fds(channel, [data], [lifeline])
            except OSError:  # it died while it waited: the reaper has its status
                sent = 0
            if sent != len(data):
                channel.close()
                continue
            if lifeline is None:
                channel.close()  # served once: it exits after this attempt
            else:
                self._serving[pid] = Serving(channel)
                self._watch(channel, pid)
            return pid
        return None

    def _await_return(self, timeout_s: float = RETURN_WAIT_S) -> None:
        """A shepherd the execd released is about to say it is idle (it closed its lifeline, and
        has its fitness to check): it is worth a short wait, where one forked ahead would copy
        its pages as it runs (5 to 6 ms of CPU), and a fork for the order would put the fork
        and the new shepherd's first steps on the order's path too."""
        deadline = time.monotonic() + timeout_s
        while not self._waiting:
            coming = {serving.channel.fileno(): pid for pid, serving in self._serving.items()
                      if serving.released and not serving.late}
            left = deadline - time.monotonic()
            if not coming:
                return
            if left <= 0:  # stopped, or starved of CPU: the next order does not wait for it again
                for pid in coming.values():
                    self._serving[pid].late = True
                return
            poll = select.poll()  # not select(): a busy node's descriptors go past 1024
            for fd in coming:
                poll.register(fd, select.POLLIN)
            for fd, _ in poll.poll(left * 1000):
                self.heard(coming[fd])

    def heard(self, pid: int) -> None:
        """A serving shepherd's channel is readable: it is idle again, or gone."""
        serving = self._serving.get(pid)
        if serving is None:
            return
        try:
            message = serving.channel.recv(16)
        except OSError:
            message = b""
        if message == IDLE and not serving.idle:
            serving.idle = True
            self._flush(pid, serving)
        elif message == READY and serving.flushed:
            self._back(pid, serving)
        else:  # gone (end of file), or out of turn
            self._drop(pid)

    def release(self, pid: int) -> None:
        """The execd has seen the attempt of shepherd `pid` end and forgotten it as its."""
        serving = self._serving.get(pid)
        if serving is not None:
            serving.released = True
            self._flush(pid, serving)

    def _flush(self, pid: int, serving: Serving) -> None:
        """Once it is idle and released: every signal the execd sent for its attempt before the
        release is pending in it by now (kill() makes a signal pending before it returns), and
        it drops them all before it says it is ready. A signal sent after an order, meant for
        the next attempt, is never dropped: no order goes to it before that."""
        if not (serving.idle and serving.released) or serving.flushed:
            return
        serving.flushed = True
        try:
            serving.channel.send(FLUSH, socket.MSG_NOSIGNAL)
        except OSError:
            self._drop(pid)

    def _back(self, pid: int, serving: Serving) -> None:
        del self._serving[pid]
        self._unwatch(serving.channel)
        # Without any forked ahead (keep 0), one back from an attempt is still worth keeping.
        if self._waiting and len(self._waiting) >= max(self.keep * IDLE_AFTER_SERVING, 1):
            # Enough wait already: the one that waited longest goes (end of file, and it exits),
            # since one that has just served has its pages its own and warm.
            oldest = next(iter(self._waiting))
            self._waiting.pop(oldest).close()
        self._waiting[pid] = serving.channel

    def _drop(self, pid: int) -> None:
        serving = self._serving.pop(pid)
        self._unwatch(serving.channel)
        serving.channel.close()

    def top_up(self) -> None:
        """Fork one more warm shepherd, if fewer than `keep` wait. An OSError (no fork) leaves
        the pool as it is: orders are then forked for, as without warm shepherds."""
        if not self.short():
            return
        try:
            pid, channel = self._fork()
        except OSError:
            self._paused = True
            return
        self._waiting[pid] = channel

    def fork_for(self, spool_dir: str, lifeline: int | None) -> int:
        """A shepherd forked for this order (none waits): it serves it from its first step, and
        more after it as any other, if the order has a lifeline. Its pid; OSError if no fork."""
        pid, channel = self._fork((spool_dir, lifeline))
        if lifeline is None:
            channel.close()
        else:
            self._serving[pid] = Serving(channel)
            self._watch(channel, pid)
        return pid

    def _fork(self, first: tuple[str, int | None] | None = None) -> tuple[int, socket.socket]:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # The shepherd is born with every signal blocked; it unblocks them once its own handlers
        # are in place (shepherd/signals.py), so no signal sent to it in between can kill it.
        before = self._calls.block_all()
        try:
            pid = os.fork()
        except OSError:
            ours.close()
            theirs.close()
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
            raise
        if pid == 0:  # the child: never return into the server's loop
            self._serve(theirs, [ours.detach(), *self.channel_fds(), *self._server_fds()], first)
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
        theirs.close()
        return pid, ours

    def ended(self, pid: int) -> None:
        """A warm shepherd was reaped: no longer waiting or serving."""
        channel = self._waiting.pop(pid, None)
        if channel is not None:
            channel.close()
        if pid in self._serving:
            self._drop(pid)

    def close(self) -> None:
        """End every waiting shepherd (end of file on its channel) and reap it. Those serving an
        attempt go on; each exits after its attempt, its channel closed."""
        waiting, self._waiting = self._waiting, {}
        for channel in waiting.values():
            channel.close()
        for pid in list(self._serving):
            self._drop(pid)
        for pid in waiting:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:  # reaped already by the server's SIGCHLD handling
                pass

    def _serve(self, channel: socket.socket, close: list[int], first: tuple[str, int | None] | None) -> None:
        """The child: the generic set-up, then attempts, one order at a time (`first`, the order
        it was forked for, if any); never returns."""
        code = 127
        try:
            prepare_child(close, self._open_files)
            # As it will be between attempts: without the lifeline of the order it was forked for.
            fitness = Fitness.at_start(without=[first[1]] if first and first[1] is not None else [])
            while True:
                order, first = first or read_order(channel), None
                if order is None:
                    code = 0
                    break
                spool_dir, lifeline = order
                code = 127  # what a loss record says, should the attempt's sequence die unrecorded
                code = self._calls.run(spool_dir)
                if lifeline is None:
                    break
                os.close(lifeline)  # the attempt's end, for the execd: its records are written
                if code != 0:
                    break
                why_not = fitness.why_not_again()
                if why_not is not None:
                    if why_not.startswith("it differs"):  # a step that did not give back what it took
                        print(f"drover shepherd {os.getpid()}: serves no other attempt: {why_not}",
                              file=sys.stderr, flush=True)
                    break
                gc.collect(0)  # the youngest objects only: what the attempt left, not the heap
                channel.send(IDLE, socket.MSG_NOSIGNAL)
                if channel.recv(16) != FLUSH:  # end of file: the fork server is gone, or sent it away
                    break
                self._calls.discard_pending()  # the execd's last signals for the attempt: meant for none
                channel.send(READY, socket.MSG_NOSIGNAL)
        finally:
            os._exit(code)


def prepare_child(close: list[int], open_files: int | None = None) -> None:
    """What every shepherd forked by the fork server does first, before it knows its attempt.
    `open_files`: the soft limit of open files the node daemon was started with, which it raised
    for itself and its fork server (open_files.py), and which the shepherd and its job get back."""
    if open_files is not None:
        set_soft_limit(open_files)
    gc.disable()  # shepherds live briefly and make no cycles that matter (forkserver.serve)
    os.setsid()  # no signal meant for the fork server's process group or session reaches it
    os.chdir("/")  # where its sequence leaves it after each attempt (shepherd_state.py compares)
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)  # the server's; the shepherd sets its own
    for fd in close:
        try:
            os.close(fd)
        except OSError:
            pass


ORDER_MAX = 4096  # a spool directory's path is far shorter


def close_on_exec(fds: list[int]) -> None:
    """Received descriptors are inheritable (socket.recv_fds drops its flags argument, so
    MSG_CMSG_CLOEXEC cannot be asked for): a lifeline a job inherited would keep its attempt
    open for the execd after the shepherd died, as long as the job ran."""
    for fd in fds:
        os.set_inheritable(fd, False)


def read_order(channel: socket.socket) -> tuple[str, int | None] | None:
    """Block until the fork server sends an order: the attempt's spool directory and, if the
    shepherd may serve again after it, the attempt's lifeline. None at end of file (the fork
    server is gone, or sent it away) or on anything that is not one whole path."""
    try:
        data, fds, flags, _ = socket.recv_fds(channel, ORDER_MAX, 1)
    except OSError:
        return None
    close_on_exec(fds)
    if not data or flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC) or len(fds) > 1:
        for fd in fds:
            os.close(fd)
        return None
    path = data.decode(errors="replace")
    if "\n" in path or "\x00" in path:
        for fd in fds:
            os.close(fd)
        return None
    return path, (fds[0] if fds else None)
