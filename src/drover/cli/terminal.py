"""`drover run --pty`: the user's terminal, relayed to an interactive job's pseudo-terminal
(shepherd/pty_relay.py has the other end and the frame format)."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import socket
import struct
import sys
import termios
import tty


def _window_size(fd: int) -> tuple[int, int]:
    try:
        rows, columns, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
        return rows, columns
    except OSError:
        return 24, 80


def relay(path: str) -> None:
    """Connect to the job's terminal and relay until the job hangs up."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    interactive = os.isatty(stdin)
    saved = termios.tcgetattr(stdin) if interactive else None
    wakeup_read, wakeup_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    previous = signal.set_wakeup_fd(wakeup_write)
    old_handler = signal.signal(signal.SIGWINCH, lambda *_: None)

    def send_size() -> None:
        rows, columns = _window_size(stdin if interactive else stdout)
        connection.sendall(b"w" + struct.pack(">HH", rows, columns))

    try:
        if interactive:
            tty.setraw(stdin)  # keys go to the job as they are: Ctrl-C becomes its SIGINT
        send_size()
        reading = [connection, stdin, wakeup_read]
        while True:
            ready, _, _ = select.select(reading, [], [])
            if wakeup_read in ready:
                os.read(wakeup_read, 512)
                send_size()
            if connection in ready:
                data = connection.recv(65536)
                if not data:
                    return
                os.write(stdout, data)
            if stdin in ready:
                data = os.read(stdin, 4096)
                if not data:
                    reading.remove(stdin)  # end of input: the job goes on
                    continue
                for start in range(0, len(data), 65535):
                    chunk = data[start : start + 65535]
                    connection.sendall(b"d" + len(chunk).to_bytes(2, "big") + chunk)
    finally:
        if saved is not None:
            termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
        signal.signal(signal.SIGWINCH, old_handler)
        signal.set_wakeup_fd(previous)
        connection.close()
