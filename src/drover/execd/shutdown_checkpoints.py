"""checkpoint(5)'s 's': "A job is checkpointed ... if the corresponding execd is shut down on
the job's machine". A Drover node daemon that stops leaves its jobs running (the next one
re-attaches to them), so they are checkpointed, not aborted: should the host go down next, each
has a checkpoint to restart from. The shepherd reads nothing from the execd to do it: the
execd sends it CHECKPOINT, as `drover checkpoint` does."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

from drover.shepherd.checkpoint import CHECKPOINT
from drover.spool import layout
from drover.spool.atomic import read_json

log = logging.getLogger("drover.execd")


def checkpoint_on_shutdown(attempts: Iterable[tuple[layout.SpoolDir, int]]) -> int:
    """Send CHECKPOINT to the shepherd of each running attempt whose job's occasions have 's';
    `attempts`: (spool, shepherd pid). How many were asked."""
    asked = 0
    for spool, shepherd_pid in attempts:
        config = read_json(spool.record(layout.CONFIG)) or {}
        checkpoint = config.get("checkpoint") or {}
        if "s" not in str(checkpoint.get("when", "")) or not os.path.exists(spool.record(layout.JOB_PID)):
            continue
        try:
            os.kill(shepherd_pid, CHECKPOINT)
            asked += 1
        except ProcessLookupError:
            continue
    if asked:
        log.info("the node daemon stops: %d checkpointing jobs asked to checkpoint ('s')", asked)
    return asked
