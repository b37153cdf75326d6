"""The spool's `signal` record: signals the execd asks the shepherd to send to the job's process
group as they are. Grid Engine's process flow: "If shepherd receives a SIGTTIN, it reads the
signal to deliver from the spoolfile "signal" and sends this signal to the job's process group."

The record is a JSON list of signal names that only the execd writes, and only by appending
(`append`, then SIGTTIN to the shepherd); the shepherd remembers how many it has read
(`SignalReader`), so a SIGTTIN that comes twice, or a read with no SIGTTIN, sends nothing twice.
"""

from __future__ import annotations

import signal

from drover.spool.atomic import read_json, write_json

READ_RECORD = signal.SIGTTIN  # sent to the shepherd: read the record, send what is new
# The signals that go through the record: those the shepherd cannot catch, and those that mean
# an order to it (terminate, suspend, resume, read the record).
BY_RECORD = frozenset({signal.SIGKILL, signal.SIGSTOP, signal.SIGTERM, signal.SIGTSTP, signal.SIGCONT,
                       READ_RECORD})


def append(path: str, signum: int) -> None:
    """Add one signal to the record (the execd). Raises OSError if it cannot be written."""
    names = read_json(path) or []
    write_json(path, [*names, signal.Signals(signum).name], mode=0o600)


class SignalReader:
    """The shepherd's side: what is new in the record since the last read."""

    __slots__ = ("path", "seen")

    def __init__(self, path: str) -> None:
        self.path = path
        self.seen = 0

    def new(self) -> list[int]:
        names = read_json(self.path)
        if not isinstance(names, list):
            return []
        fresh, self.seen = names[self.seen:], max(len(names), self.seen)
        return [int(signal.Signals[name]) for name in fresh
                if isinstance(name, str) and name in signal.Signals.__members__]
