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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from websockets.sync.client import ClientConnection as WebSocket


def _window_size(fd: int) -> tuple[int, int]:
    try:
        rows, columns, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
        return rows, columns
    except OSError:
        return 24, 80


def relay(path: str) -> None:
    """Connect to the job's terminal (its relay socket, on this host) and relay until the job
    hangs up. A socket gone or closed already is a job that ended first: nothing to relay (its
    output is in its output file). So is a relay that ends while our first frame (the window's
    size) is still unread: the kernel then resets the connection instead of closing it."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
    except (FileNotFoundError, ConnectionRefusedError):
        connection.close()
        return
    try:
        _relay(connection.sendall, connection.fileno(), lambda: connection.recv(65536))
    except (ConnectionResetError, BrokenPipeError):
        pass  # the relay ended: what it did not give us, the node left in the job's output file
    finally:
        connection.close()


def relay_websocket(websocket: WebSocket) -> None:
    """The same through the job's node (Client.terminal): a thread takes what the WebSocket
    brings into a pipe, which the relay watches with the keyboard."""
    import threading

    from websockets.exceptions import ConnectionClosed

    incoming, outgoing = os.pipe2(os.O_CLOEXEC)
    why: list[str] = []

    def pump() -> None:
        try:
            for message in websocket:
                data = message.encode() if isinstance(message, str) else message
                view = memoryview(data)
                while view:
                    view = view[os.write(outgoing, view):]
        except ConnectionClosed:
            pass
        finally:
            if websocket.close_reason:
                why.append(websocket.close_reason)
            os.close(outgoing)

    threading.Thread(target=pump, name="terminal", daemon=True).start()
    try:
        _relay(websocket.send, incoming, lambda: os.read(incoming, 65536))
    finally:
        websocket.close()
        os.close(incoming)
    if why:
        print(f"drover: {why[0]}", file=sys.stderr)


def _relay(send: Callable[[bytes], object], incoming: int, receive: Callable[[], bytes]) -> None:
    """Keys and window sizes to `send` (in shepherd/pty_relay.py's frames), what `incoming`
    brings (`receive` reads it; b"" at the end) to our stdout, until the end."""
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    interactive = os.isatty(stdin)
    saved = termios.tcgetattr(stdin) if interactive else None
    wakeup_read, wakeup_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    previous = signal.set_wakeup_fd(wakeup_write)
    old_handler = signal.signal(signal.SIGWINCH, lambda *_: None)

    def send_size() -> None:
        rows, columns = _window_size(stdin if interactive else stdout)
        send(b"w" + struct.pack(">HH", rows, columns))

    try:
        if interactive:
            tty.setraw(stdin)  # keys go to the job as they are: Ctrl-C becomes its SIGINT
        send_size()
        reading = [incoming, stdin, wakeup_read]
        while True:
            ready, _, _ = select.select(reading, [], [])
            if wakeup_read in ready:
                os.read(wakeup_read, 512)
                send_size()
            if incoming in ready:
                data = receive()
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
                    send(b"d" + len(chunk).to_bytes(2, "big") + chunk)
    finally:
        if saved is not None:
            termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
        signal.signal(signal.SIGWINCH, old_handler)
        signal.set_wakeup_fd(previous)
        os.close(wakeup_read)
        os.close(wakeup_write)
