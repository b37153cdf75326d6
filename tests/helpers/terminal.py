"""Reading what a program writes to a terminal (the primary side of a pty) in tests."""

from __future__ import annotations

import os
import select
import time


def read_until(fd: int, marker: bytes, timeout: float = 60) -> bytes:
    """Everything read from `fd` until `marker` was seen; AssertionError with what was seen if it
    does not come within `timeout` seconds. Stops early at the end of the output (EOF or EIO, as
    a pty's primary side reports its last writer gone)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while marker not in seen:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"never saw {marker!r}; saw {seen!r}")
        if select.select([fd], [], [], remaining)[0]:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen
