"""`drover submit --stage-in`: only regular files, read no further than the limit allows."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from drover.cli.commands.submit import staged_files
from drover.core.errors import BadRequest
from drover.core.limits import Limits


def staged_in_a_capped_client(path: str) -> str:
    """What staging `path` in says, in a client whose address space is capped at 1 GiB (a read
    of a device or a huge file fails there for memory rather than taking this machine's)."""
    program = f"""
import resource
resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))
from drover.cli.commands.submit import staged_files
from drover.core.errors import BadRequest
try:
    staged_files([{path!r}])
except BadRequest as error:
    print("refused:", error)
"""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip()


def test_a_device_is_refused_before_anything_is_read() -> None:
    assert staged_in_a_capped_client("/dev/zero") == \
        "refused: --stage-in: /dev/zero is not a regular file; stage in regular files only"


def test_a_fifo_without_a_writer_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "input"
    os.mkfifo(fifo)
    outcome: list[BaseException | None] = []

    def submit() -> None:
        try:
            staged_files([str(fifo)])
        except BaseException as error:  # noqa: BLE001 - what the thread raised is the result
            outcome.append(error)
        else:
            outcome.append(None)

    worker = threading.Thread(target=submit, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():  # it waits for a writer: open one, so that the thread ends
        with open(fifo, "wb"):
            pass
        worker.join(10)
        pytest.fail("--stage-in of a FIFO waited for a writer")
    assert isinstance(outcome[0], BadRequest) and "is not a regular file" in str(outcome[0])


def test_a_huge_file_is_refused_without_being_held_in_memory(tmp_path: Path) -> None:
    """A sparse file of 4 GiB, staged in by a client whose address space is capped at 1 GiB:
    refused for its size, never read whole (which would fail for memory instead)."""
    huge = tmp_path / "huge"
    with open(huge, "wb") as file:
        file.truncate(4 * 2**30)
    assert staged_in_a_capped_client(str(huge)).startswith(
        f"refused: --stage-in: the files hold more than the limit of {Limits.max_stage_in_bytes // 2**20} MiB")


def test_regular_files_are_staged_with_their_mode(tmp_path: Path) -> None:
    first, second = tmp_path / "a.txt", tmp_path / "run.sh"
    first.write_bytes(b"data\n")
    second.write_bytes(b"#!/bin/sh\n")
    os.chmod(second, 0o750)
    staged = staged_files([str(first), str(second)])
    assert [(f["name"], base64.b64decode(f["data"]), f["mode"]) for f in staged] == [
        ("a.txt", b"data\n", os.stat(first).st_mode & 0o777), ("run.sh", b"#!/bin/sh\n", 0o750)]
