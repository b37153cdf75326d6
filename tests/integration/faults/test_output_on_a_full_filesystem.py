"""A job whose output file is on a filesystem that fills up: its writes fail with ENOSPC, and
the job may go on or die without a word anywhere its owner looks. The shepherd looks at the
output file's filesystem once the job is done and says it in the attempt's record: `drover show`
prints the note, `--json` has it under the attempt. A tiny tmpfs is mounted for the test."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster


@pytest.fixture
def tiny_filesystem(cluster: LocalCluster) -> Iterator[Path]:
    """A 64 KiB tmpfs in the cluster's working directory, unmounted afterwards."""
    mount = cluster.workdir / "tiny"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True,
                          text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_an_output_file_on_a_full_filesystem_gets_a_note(cluster: LocalCluster, tiny_filesystem: Path) -> None:
    out = tiny_filesystem / "out"
    job = cluster.submit("-o", str(out), "--", "sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' x; echo done")
    cluster.drover("wait", str(job), check=False)
    note = (f"the output file {out} could not be written: No space left on device "
            "(its filesystem was full when the job ended)")
    attempt = cluster.drover_json("show", str(job))["tasks"][0]["attempts"][-1]
    assert attempt["notes"] == [note]
    assert f"note: {note}" in cluster.drover("show", str(job)).stdout
    assert out.stat().st_size < 1000000  # what did not fit was lost: hence the note


def test_an_output_file_with_room_gets_no_note(cluster: LocalCluster, tiny_filesystem: Path) -> None:
    job = cluster.submit("-o", str(tiny_filesystem / "out"), "--", "echo", "small")
    cluster.drover("wait", str(job))
    assert cluster.drover_json("show", str(job))["tasks"][0]["attempts"][-1]["notes"] == []
