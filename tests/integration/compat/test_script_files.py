"""sbatch and qsub given a script path that is not a regular file, or a script that is not UTF-8:
refused at once with the reason, in each command's words, and nothing is submitted. A FIFO with
no writer must not hang them, and a device must not be read forever."""

from __future__ import annotations

import os
import subprocess

import pytest
from tests.helpers.cluster import LocalCluster


@pytest.mark.parametrize(("command", "status", "not_regular", "not_utf8"), [
    ("sbatch", 1, "sbatch: error: Unable to open file fifo.sh: not a regular file",
     "sbatch: error: latin1.sh is not UTF-8 text (byte 18)"),
    ("qsub", 14, "qsub: Unable to read script file because of error: error opening fifo.sh: not a regular file",
     "qsub: Unable to read script file because of error: latin1.sh is not UTF-8 text (byte 18)"),
])
def test_a_script_that_is_a_fifo_or_not_utf8_is_refused_at_once(
        cluster: LocalCluster, command: str, status: int, not_regular: str, not_utf8: str) -> None:
    bin_dir = cluster.root / "bin"
    cluster.drover("compat", "install", str(bin_dir))
    os.mkfifo(cluster.workdir / "fifo.sh")
    (cluster.workdir / "latin1.sh").write_bytes(b"#!/bin/sh\necho caf\xe9\n")
    for script, message in (("fifo.sh", not_regular), ("latin1.sh", not_utf8)):
        result = subprocess.run([str(bin_dir / command), script], capture_output=True, text=True,
                                env=cluster.env, cwd=cluster.workdir, timeout=20)  # a FIFO must not hang it
        assert result.returncode == status, result
        assert result.stderr.startswith(message), result.stderr
        assert "Traceback" not in result.stderr
    assert cluster.drover_json("status", "--all") == []
