"""Where the output of attempts that ended on this node is, after their spools are gone: for
`drover logs` from another host, which reaches the files through the node. One small record per
attempt under ``<spool root>/outputs.d/``, root's (or the node user's) only, written when the
spool is removed and forgotten after KEEP_S. An attempt that ran in a scratch directory has no
record: its output left with the spool, and the controller keeps the copy it was sent."""

from __future__ import annotations

import json
import os
import time
from typing import TypedDict

from drover.execd.record_encoding import encoded
from drover.records import AttemptConfig, IdentityRecord
from drover.spool.atomic import write_json

DIRECTORY = "outputs.d"
KEEP_S = 30 * 86400.0  # as long as a user may come back for a job's output


class OutputRecord(TypedDict):
    stdout: str
    stderr: str | None
    identity: IdentityRecord | None  # whose rights read them; None: the node's own user


def remember(root: str, name: str, config: AttemptConfig) -> None:
    if config.get("scratch"):
        return
    directory = os.path.join(root, DIRECTORY)
    # --done-output moved the output where the job asked, once it was done.
    record: OutputRecord = {"stdout": config.get("done_output") or config["stdout"], "stderr": config.get("stderr") or None,
                            "identity": config.get("identity")}
    try:
        write_json(os.path.join(directory, name), record, encode=encoded)
    except FileNotFoundError:  # the first record: its directory is made once, not looked for at each
        os.makedirs(directory, mode=0o700, exist_ok=True)
        write_json(os.path.join(directory, name), record, encode=encoded)


def lookup(root: str, name: str) -> OutputRecord | None:
    if "/" in name or name.startswith("."):
        return None
    try:
        with open(os.path.join(root, DIRECTORY, name), "rb") as file:
            record: OutputRecord = json.loads(file.read())
            return record
    except (OSError, ValueError):
        return None


def forget_old(root: str, now: float | None = None) -> int:
    """Remove the records older than KEEP_S; how many went."""
    cutoff = (now if now is not None else time.time()) - KEEP_S
    gone = 0
    try:
        entries = list(os.scandir(os.path.join(root, DIRECTORY)))
    except FileNotFoundError:
        return 0
    for entry in entries:
        try:
            if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
                gone += 1
        except FileNotFoundError:
            pass
    return gone
