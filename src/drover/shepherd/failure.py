"""Why a job was not started: one line for its user, the details for its error record."""

from __future__ import annotations


class StartFailure(Exception):
    """The job could not be started; the message says why, in one line, for the user; `details`
    (a diagnostics script's output) go to the error record only."""

    def __init__(self, reason: str, details: str = "") -> None:
        super().__init__(reason)
        self.details = details
