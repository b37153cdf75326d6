"""A personal cluster's state directory for tests that run `drover up`, `down` and friends
themselves, as a user would, with DROVER_STATE_DIR pointing at it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path


def state_dir_for_test() -> Iterator[Path]:
    """A fresh state directory (short: the API socket's path must fit in 108 bytes); whatever
    cluster the test started there is stopped, and the directory removed, afterwards."""
    root = Path(tempfile.mkdtemp(prefix="drv-", dir="/tmp"))
    yield root
    subprocess.run([sys.executable, "-m", "drover", "down"], env=env_for(root), capture_output=True, timeout=60)
    shutil.rmtree(root, ignore_errors=True)


def env_for(root: Path) -> dict[str, str]:
    env = dict(os.environ, DROVER_STATE_DIR=str(root))
    env.pop("DROVER_SOCKET", None)
    return env


def drover_in(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The `drover` command with `root` as its state directory (and working directory)."""
    return subprocess.run([sys.executable, "-m", "drover", *args], env=env_for(root), capture_output=True,
                          text=True, cwd=root, timeout=60)
