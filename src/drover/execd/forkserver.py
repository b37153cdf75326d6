"""The fork server: a small, single-threaded process that forks one shepherd per attempt.

The execd has threads and an event loop, and forking such a process is unsafe; a fresh Python
per shepherd costs tens of milliseconds. So the execd starts this server first, before anything
else, and asks it over a socket pair. The server has `drover.shepherd` imported already, so a
shepherd costs one fork of a small process.

Protocol, one line each way (lines may come several in one message): "SPAWN <spool dir>\\n" → "OK <pid>\\n" or "ERR <message>\\n";
"START <spool dir>\\n", with one descriptor passed along (SCM_RIGHTS): the attempt's lifeline,
the write end of a pipe the execd watches, whose end of file is the attempt's end; its
shepherd may then serve another attempt (warm_shepherds.py) → as SPAWN. "RELEASE <pid>\\n",
no answer: the execd saw the attempt of that shepherd end. "WAIT <pid>\\n" → "OK <wait
status>\\n" for a shepherd that ended (the server is its parent, the only one who can tell how it
died), or "ERR <message>\\n".
When the execd goes away (EOF), the server exits; the shepherds it started go on.

It keeps a few shepherds forked ahead of their orders (warm_shepherds.py): a SPAWN then hands
the spool directory to one of them, and the server forks the next one while it has nothing else
to do. Without one waiting (none kept, or an order came before the next was forked), it forks
for the order, as it always did. The warm ones end with the server.
"""

from __future__ import annotations

import gc
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import OrderedDict, deque

from drover.execd.warm_shepherds import ShepherdCalls, WarmShepherds, close_on_exec

ENDED_KEPT = 1024  # wait statuses of ended shepherds kept for a WAIT, newest last


class ForkServer:
    """The execd's handle on its fork server."""

    def __init__(self, process: subprocess.Popen[bytes], sock: socket.socket) -> None:
        self.process = process
        self._sock = sock
        self._reader = sock.makefile("rb")
        self._lock = threading.Lock()

    @classmethod
    def start(cls, python: str = sys.executable, warm: int = 0, open_files: int | None = None) -> ForkServer:
        """`warm`: how many shepherds to keep forked ahead of their orders (warm_shepherds.keep_for).
        `open_files`: the soft limit of open files each shepherd gets back, where the execd raised
        its own (open_files.py)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        process = subprocess.Popen(
            [python, "-m", "drover.execd.forkserver", str(theirs.fileno()), str(warm),
             *([str(open_files)] if open_files is not None else [])],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
        )
        theirs.close()
        server = cls(process, ours)
        if server._reader.readline().strip() != b"READY":
            raise RuntimeError("the fork server did not start")
        return server

    def spawn(self, spool_dir: str, lifeline: int | None = None, released: int | None = None) -> int:
        """Start a shepherd for `spool_dir`; return its pid. With `lifeline` (a pipe's write end,
        passed to the shepherd and closed here by the caller), the attempt's end is that pipe's
        end of file, and its shepherd may serve another attempt once `release`d. `released`: a
        shepherd to `release` first, in the same message (the attempt that just ended, whose room
        this one takes): the server is woken once for both."""
        release = f"RELEASE {released}\n" if released is not None else ""
        with self._lock:
            if lifeline is None:
                self._sock.sendall(f"{release}SPAWN {spool_dir}\n".encode())
            else:
                request = f"{release}START {spool_dir}\n".encode()
                sent = socket.send_fds(self._sock, [request], [lifeline])
                if sent < len(request):
                    self._sock.sendall(request[sent:])
            reply = self._reader.readline().decode().strip()
        if reply.startswith("OK "):
            return int(reply[3:])
        raise RuntimeError(reply[4:] if reply.startswith("ERR ") else "the fork server went away")

    def release(self, pid: int) -> None:
        """The attempt of shepherd `pid` (started with a lifeline) has ended, and this execd will
        not signal that pid for it again: the shepherd may be given another."""
        try:
            with self._lock:
                self._sock.sendall(f"RELEASE {pid}\n".encode())
        except OSError:
            pass  # the server is gone, and its shepherds exit after their attempts

    def wait_status(self, pid: int) -> int | None:
        """How a shepherd this server forked ended (a wait status), or None if it cannot tell."""
        try:
            with self._lock:
                self._sock.sendall(f"WAIT {pid}\n".encode())
                reply = self._reader.readline().decode().strip()
        except OSError:
            return None
        return int(reply[3:]) if reply.startswith("OK ") else None

    def close(self) -> None:
        self._reader.close()
        self._sock.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def serve(fd: int, warm_keep: int = 0, open_files: int | None = None) -> None:
    from drover.shepherd.containment.common import remember_own_cgroups
    from drover.shepherd.containment.v1 import controller_homes
    from drover.shepherd.environment import remember_own_account
    from drover.shepherd.main import run  # imported once here, so every fork has it ready
    from drover.shepherd.signals import block_all, discard_pending

    remember_own_cgroups()  # where every shepherd starts: read once here, not once per attempt
    controller_homes()  # the same, as paths in each cgroup v1 hierarchy
    remember_own_account()  # the owner of every job of a node daemon that is not root

    # Everything imported so far is shared with every shepherd. Keep the collector's hands off
    # it, so a shepherd does not copy the whole heap page by page when it collects (shepherds
    # run with the collector off: they live briefly and make no cycles that matter).
    gc.freeze()

    sock = socket.socket(fileno=fd)
    wakeup_read, wakeup_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wakeup_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # the execd ends us by closing the socket
    selector = selectors.DefaultSelector()
    selector.register(sock, selectors.EVENT_READ)
    selector.register(wakeup_read, selectors.EVENT_READ)
    # The descriptors no shepherd keeps: the server's socket, its wakeup pipe and its selector.
    server_fds = [sock.fileno(), wakeup_read, wakeup_write, selector.fileno()]
    lifelines: deque[int] = deque()  # passed with START requests, in the order they came
    # No shepherd keeps another attempt's lifeline either, or that attempt's end would wait for it.
    warm = WarmShepherds(warm_keep, ShepherdCalls(run, block_all, discard_pending),
                         lambda: [*server_fds, *lifelines],
                         lambda channel, pid: selector.register(channel, selectors.EVENT_READ, pid),
                         selector.unregister, open_files)
    sock.sendall(b"READY\n")
    buffer = b""
    ended: OrderedDict[int, int] = OrderedDict()  # pid → wait status, of shepherds reaped
    while True:
        # A warm shepherd is forked only when nothing else waits: an order never queues behind it.
        events = selector.select(timeout=0 if warm.short() else None)
        if not events:
            warm.top_up()
            continue
        requests = False
        for key, _ in events:
            if key.fileobj == wakeup_read:
                try:
                    os.read(wakeup_read, 4096)
                except BlockingIOError:
                    pass
                for pid in _reap(ended):
                    warm.ended(pid)
            elif key.fileobj is sock:
                requests = True
            else:
                warm.heard(key.data)  # a serving shepherd's channel: idle again, or gone
        if not requests:
            continue
        data, fds, _, _ = socket.recv_fds(sock, 65536, 16)
        close_on_exec(fds)
        lifelines.extend(fds)
        if not data:
            warm.close()  # the warm ones are no attempt's: they end with us
            return  # the execd is gone; the attempts' shepherds are not ours to stop
        buffer += data
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            command, _, argument = line.decode().partition(" ")
            if command == "WAIT" and argument.isdigit():
                sock.sendall(_wait_reply(int(argument), ended))
            elif command == "RELEASE" and argument.isdigit():
                warm.release(int(argument))  # no answer
            elif command == "SPAWN" or (command == "START" and lifelines):
                lifeline = lifelines.popleft() if command == "START" else None
                sock.sendall(_start(warm, argument, lifeline))
            else:
                sock.sendall(f"ERR unknown request {command!r}\n".encode())


def _start(warm: WarmShepherds, spool_dir: str, lifeline: int | None) -> bytes:
    """A shepherd for `spool_dir`: a warm one, or one forked for it; the answer to the execd.
    The server's copy of the lifeline is closed either way: the shepherd holds the only one."""
    try:
        pid = warm.order(spool_dir, lifeline) or warm.fork_for(spool_dir, lifeline)
    except OSError as error:
        return f"ERR fork failed: {error.strerror}\n".encode()
    finally:
        if lifeline is not None:
            os.close(lifeline)
    return f"OK {pid}\n".encode()


def _reap(ended: OrderedDict[int, int]) -> list[int]:
    """Reap every child that ended; their pids."""
    reaped: list[int] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped.append(pid)
        ended[pid] = status
        while len(ended) > ENDED_KEPT:
            ended.popitem(last=False)


def _wait_reply(pid: int, ended: OrderedDict[int, int]) -> bytes:
    """The wait status of shepherd `pid`: the execd asks once the shepherd's pidfd said it
    ended, possibly before the SIGCHLD that reaps it was handled here."""
    for _ in range(100):
        if pid in ended:
            return f"OK {ended.pop(pid)}\n".encode()
        try:
            reaped, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return b"ERR not a child of this server\n"
        if reaped:
            return f"OK {status}\n".encode()
        time.sleep(0.002)
    return b"ERR still running\n"


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0,
          int(sys.argv[3]) if len(sys.argv) > 3 else None)
