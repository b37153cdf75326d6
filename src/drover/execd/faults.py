"""Fault injection, for testing only: a seam that holds the execd at a chosen point, so that a
test can kill it there (or let it go on) and check that the next execd picks up where this one
stopped. It is off unless the execd's environment turns it on; drover.toml and the command line
have no way to.

DROVER_FAULT_PAUSE_BEFORE=STEP
    STEP is a step of the cleanup pipeline (execd/cleanup.py: exit_hook, stage_out, record, report,
    mail, remove). Right before that step of each attempt's cleanup, the execd creates the
    empty file `paused-before-STEP` in the attempt's spool directory and holds that pipeline
    until the file is removed. A test waits for the file, then kills the execd there
    (tests/integration/execd/test_cleanup_pipeline.py) or removes the file to let it go on.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass

from drover.spool import layout

PAUSE_BEFORE = "DROVER_FAULT_PAUSE_BEFORE"


def pause_marker(step: str) -> str:
    """The file, in the attempt's spool directory, that holds the pipeline before `step`."""
    return f"paused-before-{step}"


@dataclass(frozen=True, slots=True)
class Faults:
    pause_before: str | None = None  # a cleanup step

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> Faults:
        return cls(pause_before=environ.get(PAUSE_BEFORE) or None)

    def __bool__(self) -> bool:
        return self.pause_before is not None

    def describe(self) -> str:
        return f"{PAUSE_BEFORE}={self.pause_before}" if self.pause_before else "none"

    async def before_cleanup_step(self, spool: layout.SpoolDir, step: str) -> None:
        """Hold here while the marker file exists (or for good, if the test kills the execd)."""
        if self.pause_before != step:
            return
        marker = spool.record(pause_marker(step))
        with open(marker, "w"):
            pass
        while os.path.exists(marker):
            await asyncio.sleep(0.02)


NO_FAULTS = Faults()
