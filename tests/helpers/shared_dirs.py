"""A directory under /tmp that other users' processes reach (pytest's own tmp_path sits in a
0700 directory): a spool root a job's owner traverses (0711), or a place where anyone may write
evidence (01777). Removed with what is in it when the test is done."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def directory_in_tmp(prefix: str, mode: int) -> Iterator[Path]:
    made = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        os.chmod(made, mode)
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)
