"""An attempt's spool directory made as the node makes it (its job script and config), the
shepherd run on it, and the exit status (with the usage) it records there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers.attempt_config import attempt_config


def make_spool(root: Path, script: str, name: str = "7.0.1", **overrides: Any) -> Path:
    spool = root / name
    spool.mkdir(parents=True)
    (spool / "job_script").write_text(script)
    workdir = overrides.pop("workdir", str(root))
    config = attempt_config(str(root), name, workdir=workdir, submit_dir=workdir, **overrides)
    (spool / "config").write_text(json.dumps(config))
    return spool


def run_shepherd(spool: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "drover.shepherd", str(spool)], start_new_session=True)


def exit_status(spool: Path) -> dict[str, Any]:
    """How the attempt ended, as the node reports it: without the usage the shepherd wrote in it."""
    record: dict[str, Any] = json.loads((spool / "exit_status").read_text())
    record.pop("usage", None)
    return record


def usage(spool: Path) -> dict[str, Any]:
    """What the job used, which the shepherd writes in the exit record."""
    used: dict[str, Any] = json.loads((spool / "exit_status").read_text())["usage"]
    return used
