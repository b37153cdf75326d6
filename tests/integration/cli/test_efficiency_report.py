"""`drover efficiency`: a job that keeps one of its two CPUs busy for a second and holds 64 MiB
is reported at about half its core-walltime and at least 64 MiB of memory, in seff's words."""

from __future__ import annotations

import re

from tests.helpers.cluster import LocalCluster

SPIN = ("python3 -c \"import time\nb = bytearray(64 << 20)\nb[::4096] = b'x' * len(b[::4096])\n"
        "end = time.time() + 1\nwhile time.time() < end: pass\"")


def test_a_jobs_use_against_its_request(cluster: LocalCluster) -> None:
    job = cluster.submit("--cpus", "2", "--mem", "256M", "--", "sh", "-c", SPIN)
    assert cluster.drover("wait", str(job)).returncode == 0
    text = cluster.drover("efficiency", str(job)).stdout
    assert f"Job ID: {job}" in text and "State: COMPLETED (exit code 0)" in text and "Cores per node: 2" in text
    efficiency = float(re.search(r"CPU Efficiency: ([0-9.]+)%", text).group(1))  # type: ignore[union-attr]
    assert 25 <= efficiency <= 75, text  # one of two cores, for most of the job's time
    used = re.search(r"Memory Utilized: ([0-9.]+) MB", text)
    assert used is not None and float(used.group(1)) >= 64, text
    assert "of 256.00 MB" in text
    missing = cluster.drover("efficiency", "99999", check=False)
    assert missing.returncode != 0 and "does not exist" in missing.stderr
