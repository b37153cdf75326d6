"""Interactive jobs (Accelerator step 4/9, `qrsh`, `srun --pty`): the job runs on a pseudo-
terminal, and one client at a time relays it to a user's terminal through a Unix socket in the
attempt's spool directory.

Client → shepherd frames: b"d" + 2-byte length + bytes for the terminal (keys, Ctrl-C included:
the terminal's line discipline turns it into SIGINT for the job's foreground process group), or
b"w" + rows + columns (2 bytes each) for a window size. Shepherd → client: the terminal's output,
as it comes. The relay closes the connection once the job ended and its output was sent.
A job that ended before any client connected (it ran for milliseconds) leaves what it wrote in
its output file, where `drover run --pty` reads it instead.
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct
import termios

WINSIZE = struct.Struct("HHHH")
SOCKET = "pty.sock"
BACKLOG_LIMIT = 1 << 20  # output kept for a client that has not connected yet


def take_controlling_terminal() -> None:
    """Popen's preexec_fn, after setsid: stdin (the pty's slave) becomes the controlling tty.
    Only os-level calls: the shepherd has a single thread, so this is safe between fork and exec."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtyRelay:
    def __init__(self, spool_dir: str, owner_uid: int | None, undelivered_to: int | None = None) -> None:
        """`undelivered_to`: the job's output file (opened as its owner), which gets what no
        client was there to take when the job ended."""
        self.master, self.slave = os.openpty()
        os.set_blocking(self.master, False)
        self.path = os.path.join(spool_dir, SOCKET)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        if owner_uid is not None:
            os.chown(self.path, owner_uid, -1)
        os.chmod(self.path, 0o600)
        self.listener.listen(1)
        self.listener.setblocking(False)
        self.undelivered_to = undelivered_to
        self.client: socket.socket | None = None
        self.pending = b""  # output not yet delivered
        self.incoming = b""

    def fds(self) -> list[int]:
        fds = [self.master, self.listener.fileno()]
        if self.client is not None:
            fds.append(self.client.fileno())
        return fds

    def handle(self, fd: int) -> None:
        if fd == self.listener.fileno():
            self._accept()
            self._flush()
        elif fd == self.master:
            self._read_master()
        elif self.client is not None and fd == self.client.fileno():
            data = self.client.recv(65536)
            if not data:
                self.client.close()
                self.client = None
                return
            self.incoming += data
            self._frames()

    def _read_master(self) -> None:
        try:
            data = os.read(self.master, 65536)
        except (BlockingIOError, OSError):
            return
        self.pending = (self.pending + data)[-BACKLOG_LIMIT:]
        self._flush()

    def _flush(self) -> None:
        if self.client is not None and self.pending:
            try:
                self.client.sendall(self.pending)
            except OSError:
                self.client = None
                return
            self.pending = b""

    def _accept(self) -> None:
        client, _ = self.listener.accept()
        if self.client is not None:
            self.client.close()  # the newest client wins
        self.client = client

    def _keep_undelivered(self) -> None:
        view = memoryview(self.pending)
        try:
            while view and self.undelivered_to is not None:
                view = view[os.write(self.undelivered_to, view):]
        except OSError:  # the file's filesystem is full: nothing more to do for it
            pass
        self.pending = b""

    def _frames(self) -> None:
        while len(self.incoming) >= 3:
            kind = self.incoming[:1]
            if kind == b"d":
                size = int.from_bytes(self.incoming[1:3], "big")
                if len(self.incoming) < 3 + size:
                    return
                os.write(self.master, self.incoming[3 : 3 + size])
                self.incoming = self.incoming[3 + size :]
            elif kind == b"w":
                if len(self.incoming) < 5:
                    return
                rows, columns = struct.unpack(">HH", self.incoming[1:5])
                fcntl.ioctl(self.master, termios.TIOCSWINSZ, WINSIZE.pack(rows, columns, 0, 0))
                self.incoming = self.incoming[5:]
            else:
                self.incoming = b""  # not our protocol: drop it

    def finish(self) -> None:
        """The job ended: send what it wrote last, then hang up. A client that connected but was
        not taken yet gets it; with no client, it goes to the job's output file."""
        while True:
            before = len(self.pending)
            self._read_master()
            if len(self.pending) == before:
                break
        try:
            while True:
                self._accept()
        except OSError:  # none is waiting (BlockingIOError)
            pass
        self._flush()
        self._keep_undelivered()
        for closing in (self.client, self.listener):
            if closing is not None:
                closing.close()
        os.close(self.master)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
