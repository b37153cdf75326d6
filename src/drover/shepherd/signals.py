"""Turn signals into bytes on a pipe. Handlers do nothing, so nothing can go wrong in them."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable


class SignalInbox:
    def __init__(self, signums: Iterable[signal.Signals]) -> None:
        self._read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)  # each signal's number lands here
        for signum in signums:
            signal.signal(signum, _ignore)  # a handler must exist for the wakeup fd to fire

    def fileno(self) -> int:
        return self._read_fd

    def drain(self) -> list[signal.Signals]:
        try:
            return [signal.Signals(number) for number in os.read(self._read_fd, 512)]
        except BlockingIOError:
            return []


def _ignore(signum: int, frame: object) -> None:
    """Do nothing: the wakeup fd carries the signal to the supervising loop."""
