"""`drover efficiency`: a job that keeps one of its two CPUs busy for a second and holds 64 MiB
is reported at the CPU it used over its core-walltime (at most half: one of two cores) and at
least 64 MiB of memory, in seff's words."""

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
    # The job's own record says what it used and how long it ran (a loaded host stretches the
    # second it spins): the report is that CPU over two cores' wall time, never more than one core.
    (attempt,) = cluster.drover_json("show", str(job))["tasks"][0]["attempts"]
    usage = attempt["usage"]
    cpu = usage["cgroup_cpu_s"] if usage["cgroup_cpu_s"] is not None else usage["user_cpu_s"] + usage["sys_cpu_s"]
    assert abs(efficiency - 100 * cpu / (2 * usage["wall_s"])) < 0.1, (text, usage)
    assert 5 <= efficiency <= 75, text
    used = re.search(r"Memory Utilized: ([0-9.]+) MB", text)
    assert used is not None and float(used.group(1)) >= 64, text
    assert "of 256.00 MB" in text
    missing = cluster.drover("efficiency", "99999", check=False)
    assert missing.returncode != 0 and "does not exist" in missing.stderr
