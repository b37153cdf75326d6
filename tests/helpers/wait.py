"""Wait on a condition, never on a fixed delay; say what was last seen when it never came."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(probe: Callable[[], T], timeout: float = 20.0, describe: str = "the condition",
               interval: float = 0.02) -> T:
    """Call `probe` until it returns something truthy; return that. Fail with the last value."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        try:
            last = probe()
        except Exception as error:  # a probe may fail while a daemon is still starting
            last = error
        else:
            if last:
                return last  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {describe}; last seen: {last!r}")
        time.sleep(interval)
