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

from drover.execd.decoders import RECORDS, FinalProgress
from drover.records import (
    AttemptConfig,
    CleanupProgress,
    ContainmentRecord,
    EndRecord,
    ExitStatus,
    FinalRecord,
    StagedOutRecord,
    Usage,
    config_in_current_layout,
)
from drover.spool import layout
from drover.spool.atomic import read_bytes, read_json

OVER_MEMORY = "over_memory"  # written by the node before it kills an attempt over its memory
# Written by a node that leaves its cluster for good before it ends an attempt: why it leaves.
NODE_LEFT = "node_left"
FINAL = "final"  # the attempt's final record, written by the cleanup's record step (execd/cleanup.py)

log = logging.getLogger("drover.execd")

T = TypeVar("T")


def exit_status(spool: layout.SpoolDir) -> ExitStatus:
    """How the attempt ended; a system failure naming the record when it cannot be read."""
    record, _, read = shepherd_end(spool)
    return with_node_left(record, node_left(spool)) if read else record


def shepherd_end(spool: layout.SpoolDir) -> tuple[ExitStatus, Usage | None, bool]:
    """The exit record as the shepherd (or the node, for an attempt it ended itself) wrote it,
    with the node's kill over the memory limit, but not the node's leaving (`with_node_left`),
    and without the usage the shepherd wrote in it, which comes apart (None where the record
    holds none: see `usage`); and whether it could be read (if not, the record is a system
    failure that names it)."""
    record, problem = _read(spool, layout.EXIT_STATUS, EndRecord)
    if record is None:
        return {"exit_code": None, "signal": None, "failure": f"the attempt's exit record {problem}",
                "timed_out": False, "terminated": False, "out_of_memory": False, "shepherd_lost": True}, None, False
    used = record.pop("usage", None)
    if not record["out_of_memory"] and os.path.exists(spool.record(OVER_MEMORY)):
        record["out_of_memory"] = True  # the node ended it over its hard memory limit (execd/enforcement.py)
    return record, used, True


def with_node_left(record: ExitStatus, left: str | None) -> ExitStatus:
    """`record`, or, when its node left as it ended (`left`: why), a copy that says so: ended as
    its node left (execd/leaving.py), whatever it did with the signals it got (the outer
    scheduler's too: a job may exit 0 on SIGTERM), it is decided as the node's loss, not as the
    job's own end, nor as anyone's cancel."""
    return record if left is None else {**record, "node_left": True, "failure": left}


def node_left(spool: layout.SpoolDir) -> str | None:
    """Why the node left, if it marked the attempt as it did (NODE_LEFT)."""
    try:
        with open(spool.record(NODE_LEFT), "rb") as file:
            return file.read(2000).decode(errors="replace").strip() or "its node left the cluster"
    except OSError:
        return None


def usage(spool: layout.SpoolDir) -> Usage | None:
    """What the job used: from the exit record, where the shepherd writes it; else from the
    `usage` record a shepherd of an earlier Drover wrote (an attempt that ran across the
    node's upgrade), or that one wrote before it died without an exit record."""
    return shepherd_end(spool)[1] or earlier_usage(spool)


def earlier_usage(spool: layout.SpoolDir) -> Usage | None:
    """The `usage` record of the earlier layout, if there is one."""
    return _read(spool, layout.USAGE, Usage)[0]


def config(spool: layout.SpoolDir) -> AttemptConfig | None:
    """The attempt's config, in this Drover's layout even when an older one wrote it."""
    return _read(spool, layout.CONFIG, AttemptConfig, config_in_current_layout)[0]


def valid_config(record: Any) -> AttemptConfig | None:
    """`record`, a config as read from a spool, if it is one (as `config` reads it), else None."""
    if not isinstance(record, dict):
        return None
    try:
        return RECORDS.convert(config_in_current_layout(record), AttemptConfig)
    except msgspec.ValidationError:
        return None


def containment(spool: layout.SpoolDir) -> ContainmentRecord | None:
    return _read(spool, layout.CONTAINMENT, ContainmentRecord)[0]


def staged_out(spool: layout.SpoolDir) -> StagedOutRecord | None:
    return _read(spool, layout.STAGED_OUT, StagedOutRecord)[0]


def cleanup_progress(spool: layout.SpoolDir) -> CleanupProgress:
    """How far the cleanup pipeline got; from the top when it has no (readable) record yet.

    The progress is in two records: the final record holds it as of the record step, written
    with it (one durable write for both, execd/cleanup.py); the `cleanup` record holds it as of
    the last step recorded on its own, before the record step or after it. Steps are only ever
    added to `done`, so the one with more steps done is the later; of two alike, `cleanup`, which
    is only written after the final record when it adds a failed try. A final record an earlier
    Drover wrote holds no progress: its `cleanup` record says it all."""
    recorded = _read(spool, layout.CLEANUP, CleanupProgress)[0]
    final = _read(spool, FINAL, FinalProgress)[0]
    with_final = final.get("cleanup") if final is not None else None
    if with_final is not None and (recorded is None or len(with_final["done"]) > len(recorded["done"])):
        return with_final
    return recorded or {"done": [], "step": None, "tries": 0, "error": None}


def _read(spool: layout.SpoolDir, name: str, kind: type[T],
          upgrade: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> tuple[T | None, str]:
    path = spool.record(name)
    try:
        if upgrade is None:
            return RECORDS.decode(read_bytes(path), kind), ""
        return RECORDS.convert(upgrade(RECORDS.decode(read_bytes(path), dict[str, Any])), kind), ""
    except FileNotFoundError:
        return None, f"{path} is missing"
    except (OSError, msgspec.DecodeError) as error:  # ValidationError is a DecodeError
        log.warning("attempt %s: %s is unreadable: %s", spool.name, path, error)
        return None, f"{path} is unreadable: {error}"


class Ended:
    """An ended attempt's records as its cleanup reads them: each from the spool at most once,
    when first needed. The shepherd (or the node, for an attempt it ended itself) wrote them all
    before the cleanup began, and no one writes them after; the one fact that may still come is
    the node's own, that it left its cluster (`leave`), which the node holds in memory as it
    marks it. `final`: the final record once the cleanup built it (execd/cleanup.py). `config`:
    the config as the node wrote it, in this process (then it is not read back)."""

    __slots__ = ("spool", "left", "final", "_end", "_usage", "_config", "_stop_why", "_read")

    def __init__(self, spool: layout.SpoolDir, left: str | None, config: AttemptConfig | None = None) -> None:
        self.spool = spool
        self.left = left  # why the node left, if it marked the attempt as it did
        self.final: FinalRecord | None = None
        self._end: tuple[ExitStatus, Usage | None, bool] | None = None
        self._usage: Usage | None = None
        self._config = config
        self._stop_why = "cancel"
        self._read: set[str] = {layout.CONFIG} if config is not None else set()

    def leave(self, why: str) -> None:
        self.left, self.final = why, None  # the final record says what the node decided: built again

    def exit_status(self) -> ExitStatus:
        record, _, read = self._shepherd_end()
        return with_node_left(record, self.left) if read else record

    def usage(self) -> Usage | None:
        """From the exit record, which is read once for both; the `usage` record of the earlier
        layout is opened only where the exit record holds none (`usage`)."""
        if self._first(layout.USAGE):
            self._usage = self._shepherd_end()[1] or earlier_usage(self.spool)
        return self._usage

    def _shepherd_end(self) -> tuple[ExitStatus, Usage | None, bool]:
        if self._end is None:
            self._end = shepherd_end(self.spool)
        return self._end

    def config(self) -> AttemptConfig | None:
        if self._first(layout.CONFIG):
            self._config = config(self.spool)
        return self._config

    def stop_why(self) -> str:
        """Why the node asked the shepherd to stop the job (cancel when it did not say)."""
        if self._first(layout.STOP_REQUEST):
            self._stop_why = (read_json(self.spool.record(layout.STOP_REQUEST)) or {}).get("why", "cancel")
        return self._stop_why

    def _first(self, name: str) -> bool:
        if name in self._read:
            return False
        self._read.add(name)
        return True
