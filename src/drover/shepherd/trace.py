"""The spool's `trace`: what the shepherd did, when. GE process flow: "A file containing debug
information about the job's execution". One line per step of the sequence, each with the time it
happened (seconds since the epoch), kept in memory and written whole (spool.outcome) before
`exit_status`, or with the error when the job could not be started."""

from __future__ import annotations

import time


class Trace:
    __slots__ = ("lines",)

    def __init__(self) -> None:
        self.lines: list[str] = []

    def step(self, what: str, at: float | None = None) -> None:
        self.lines.append(f"{time.time() if at is None else at:.6f} {what}")

    def extend(self, stamped: list[str]) -> None:
        """Lines that carry their own time already (signals the supervising loop ignored)."""
        self.lines += stamped

    def data(self) -> bytes:
        return ("\n".join(self.lines) + "\n").encode()
