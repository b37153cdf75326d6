"""An attempt's records, read back from its spool as the types of drover.records.

The node reports what these return, so every report it sends is one the controller's decoder
accepts: a record that is missing or does not match its type (a shepherd killed while writing
it, a spool from an older Drover) becomes a failure that names the file, not a report the
controller would refuse forever.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from drover.records import (
    AttemptConfig,
    CleanupProgress,
    ContainmentRecord,
    ExitStatus,
    StagedOutRecord,
    Usage,
    config_in_current_layout,
)
from drover.spool import layout

OVER_MEMORY = "over_memory"  # written by the node before it kills an attempt over its memory
# Written by a node that leaves its cluster for good before it ends an attempt: why it leaves.
NODE_LEFT = "node_left"

log = logging.getLogger("drover.execd")

T = TypeVar("T")


def exit_status(spool: layout.SpoolDir) -> ExitStatus:
    """How the attempt ended; a system failure naming the record when it cannot be read."""
    record, problem = _read(spool, layout.EXIT_STATUS, ExitStatus)
    if record is not None:
        if not record["out_of_memory"] and os.path.exists(spool.record(OVER_MEMORY)):
            record["out_of_memory"] = True  # the node ended it over its hard memory limit (execd/enforcement.py)
        left = _node_left(spool)
        if left is not None:
            # Ended as its node left (execd/leaving.py), whatever it did with the signals it got
            # (the outer scheduler's too: a job may exit 0 on SIGTERM): decided as the node's
            # loss, not as the job's own end, nor as anyone's cancel.
            record["node_left"], record["failure"] = True, left
        return record
    return {"exit_code": None, "signal": None, "failure": f"the attempt's exit record {problem}",
            "timed_out": False, "terminated": False, "out_of_memory": False, "shepherd_lost": True}


def _node_left(spool: layout.SpoolDir) -> str | None:
    try:
        with open(spool.record(NODE_LEFT), "rb") as file:
            return file.read(2000).decode(errors="replace").strip() or "its node left the cluster"
    except OSError:
        return None


def usage(spool: layout.SpoolDir) -> Usage | None:
    return _read(spool, layout.USAGE, Usage)[0]


def config(spool: layout.SpoolDir) -> AttemptConfig | None:
    """The attempt's config, in this Drover's layout even when an older one wrote it."""
    return _read(spool, layout.CONFIG, AttemptConfig, config_in_current_layout)[0]


def containment(spool: layout.SpoolDir) -> ContainmentRecord | None:
    return _read(spool, layout.CONTAINMENT, ContainmentRecord)[0]


def staged_out(spool: layout.SpoolDir) -> StagedOutRecord | None:
    return _read(spool, layout.STAGED_OUT, StagedOutRecord)[0]


def cleanup_progress(spool: layout.SpoolDir) -> CleanupProgress:
    """How far the cleanup pipeline got; from the top when it has no (readable) record yet."""
    return _read(spool, layout.CLEANUP, CleanupProgress)[0] or {"done": [], "step": None, "tries": 0, "error": None}


def _read(spool: layout.SpoolDir, name: str, kind: type[T],
          upgrade: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> tuple[T | None, str]:
    path = spool.record(name)
    try:
        with open(path, "rb") as file:
            if upgrade is None:
                return msgspec.json.decode(file.read(), type=kind), ""
            return msgspec.convert(upgrade(msgspec.json.decode(file.read(), type=dict[str, Any])), type=kind), ""
    except FileNotFoundError:
        return None, f"{path} is missing"
    except (OSError, msgspec.DecodeError) as error:  # ValidationError is a DecodeError
        log.warning("attempt %s: %s is unreadable: %s", spool.name, path, error)
        return None, f"{path} is unreadable: {error}"
