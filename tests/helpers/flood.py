"""Peers that misbehave before they are known, as raw-socket programs (`python -c CODE ARGS`) to
run as a real user or inside a node's network namespace, and the controller's memory while they
do. A target is the local socket's path, or HOST,PORT,CA_FILE for the TLS port (the controller
verified against the cluster's CA; no client certificate is shown)."""

from __future__ import annotations

import os
import threading
import time
from types import TracebackType

_CONNECT = """
import json, select, socket, ssl, sys, time
def connect(target, timeout=10):
    if target.startswith("/"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(target)
        return s
    host, port, ca = target.split(",")
    raw = socket.create_connection((host, int(port)), timeout=timeout)
    context = ssl.create_default_context(cafile=ca)
    context.check_hostname = False
    return context.wrap_socket(raw)
def read_to_close(s, reply, timeout):
    s.setblocking(True)
    s.settimeout(timeout)
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return reply, "closed"
            reply += chunk
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        return reply, "closed"
    except TimeoutError:
        return reply, "open"
"""

HUGE_HEADER = _CONNECT + """
# argv: target, bytes of header to send at most. Sends one header line without end, 64 KiB at
# a time, and stops at the first byte of an answer. Prints what was sent, the answer, whether
# the connection was then closed.
target, size = sys.argv[1], int(sys.argv[2])
s = connect(target)
s.sendall(b"GET /v1/ping HTTP/1.1\\r\\nHost: drover\\r\\nX-Big: ")
s.setblocking(False)
piece, sent, reply, error = b"a" * 65536, 0, b"", ""
deadline = time.monotonic() + 120
while sent < size and time.monotonic() < deadline and not reply:
    readable, writable, _ = select.select([s], [s], [], 1)
    if readable or (hasattr(s, "pending") and s.pending()):
        try:
            chunk = s.recv(65536)
        except (ssl.SSLWantReadError, BlockingIOError):
            chunk = None
        except OSError as e:
            error = repr(e)
            break
        if chunk == b"":
            break
        if chunk:
            reply += chunk
    if writable and not reply:
        try:
            sent += s.send(piece)
        except (BlockingIOError, ssl.SSLWantWriteError):
            pass
        except OSError as e:
            error = repr(e)
            break
started = time.monotonic()
reply, state = read_to_close(s, reply, 10)
print(json.dumps({"sent": sent, "reply": reply[:300].decode("latin-1"), "state": state, "error": error,
                  "closed_after_s": time.monotonic() - started}))
"""

HALF_OPEN = _CONNECT + """
# argv: target, how many. Opens that many connections, each with the start of a request that
# never ends (or nothing, for TLS connections: no handshake), prints how many the controller
# answered at once (refused) and then "holding", and holds them all until stdin closes.
import resource
target, count = sys.argv[1], int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
for _ in range(count):
    if target.startswith("/"):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(target)
        try:
            s.send(b"GET /v1/ping HTTP/1.1\\r\\nHost: drover\\r\\nX-Slow: a")
        except OSError:
            pass
    else:
        host, port, _ca = target.split(",")
        s = socket.create_connection((host, int(port)), timeout=10)
    held.append(s)
time.sleep(0.5)
def answered(s):
    # select() cannot take descriptors past 1024: a peek that does not wait, instead.
    try:
        s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return False
    except OSError:
        pass
    return True  # an answer, or the end of the connection
answered = sum(1 for s in held if answered(s))
print(json.dumps({"opened": len(held), "answered_at_once": answered}), flush=True)
print("holding", flush=True)
sys.stdin.read()
"""

DRIBBLE = _CONNECT + """
# argv: target, what ("head": a header one byte every 0.2 s, never ending; "nothing"; "body":
# a whole head announcing 100 bytes, then 10 of them). Prints how long until the controller
# closed the connection and what it answered.
target, what = sys.argv[1], sys.argv[2]
s = connect(target)
started = time.monotonic()
reply, state = b"", "open"
if what == "body":
    s.sendall(b"POST /v1/jobs HTTP/1.1\\r\\nHost: drover\\r\\nContent-Type: application/json\\r\\n"
              b"Content-Length: 100\\r\\n\\r\\n" + b"[" * 10)
if what in ("nothing", "body"):
    reply, state = read_to_close(s, reply, 60)
else:
    s.sendall(b"GET /v1/ping HTTP/1.1\\r\\nHost: drover\\r\\nX-Slow: ")
    s.setblocking(False)
    while time.monotonic() - started < 60:
        readable, _, _ = select.select([s], [], [], 0.2)
        if readable:
            break
        try:
            s.send(b"a")
        except OSError:
            break
    reply, state = read_to_close(s, reply, 10)
print(json.dumps({"after_s": time.monotonic() - started, "reply": reply[:300].decode("latin-1"), "state": state}))
"""


def rss_kib(pid: int) -> int:
    """The process's resident memory now (VmRSS of /proc/PID/status), in KiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


def open_descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class PeakRss:
    """The highest VmRSS of a process while the block runs, sampled every few milliseconds."""

    def __init__(self, pid: int, every_s: float = 0.005) -> None:
        self.pid = pid
        self.every_s = every_s
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak_kib = max(self.peak_kib, rss_kib(self.pid))
            time.sleep(self.every_s)

    def __enter__(self) -> PeakRss:
        self.peak_kib = rss_kib(self.pid)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_kib = max(self.peak_kib, rss_kib(self.pid))
