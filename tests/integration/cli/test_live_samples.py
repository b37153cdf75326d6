"""Watching a running job: a job that allocates 200 MiB in steps while two processes burn a known
amount of CPU time shows its memory rising in `drover top --json` and in its samples, and the
samples account for the CPU time both processes used; `drover show` draws sparklines, and the
job leaves `drover top` when it ends."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.wait import wait_until

MIB = 1 << 20
BURN_S = 2.0  # the CPU time each of the job's two burners uses
# Two burners (processes: threads would share one core under the GIL), each using BURN_S of CPU
# time by its own account, however long the machine's load makes that take, then idling; and one
# that takes 40 MiB every 1.5 s up to 200 MiB, written so every page is resident, and holds it
# until the test, done watching, creates the file `release`.
JOB = """burn='
import os, time
while sum(os.times()[:2]) < {burn_s}:
    pass
while True:
    time.sleep(1)
'
python3 -c "$burn" & a=$!
python3 -c "$burn" & b=$!
python3 -c "
import os, time
blocks = []
for _ in range(5):
    blocks.append(b'x' * (40 << 20))
    time.sleep(1.5)
while not os.path.exists('{release}'):
    time.sleep(0.2)
"
kill $a $b
"""


@pytest.fixture
def sampled_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """A personal cluster whose node samples its jobs every second."""
    yield from serve(request, LocalCluster(config_toml="[execd]\nsample_s = 1.0\n"))


def test_a_running_jobs_memory_and_cpu_are_watched(sampled_cluster: LocalCluster) -> None:
    cluster = sampled_cluster
    release = cluster.root / "release"
    job = cluster.submit("--cpus", "2", "--mem", "512M", "--", "sh", "-c", JOB.format(burn_s=BURN_S, release=release))
    try:
        memory: list[int] = []
        cpu: list[float] = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (not memory or memory[-1] < 190 * MIB):
            rows = [row for row in cluster.drover_json("top") if row["job_id"] == job]
            if rows:
                assert rows[0]["cpus"] == 2 and rows[0]["memory_mib"] == 512 and rows[0]["node"]
                if not memory or rows[0]["memory_bytes"] != memory[-1]:
                    memory.append(rows[0]["memory_bytes"])
                    cpu.append(rows[0]["cpu"])
            time.sleep(0.4)
        assert memory and memory[-1] >= 190 * MIB, memory
        steps = [after - before for before, after in zip(memory, memory[1:], strict=False) if after - before > 20 * MIB]
        assert len(steps) >= 2, memory  # seen rising in steps, not only at its peak
        assert max(cpu) > 0, cpu  # `drover top` shows the job using CPU

        # The CPU time the samples account for (their average since the start, times the time since
        # then) comes to what both burners used: one of them alone would be about half of it. The
        # attempt's start as the controller recorded it is a little after the node's, which the
        # average is taken over: the figure falls short by that little, a shortfall that shrinks as
        # the job runs on.
        started_at = cluster.client().job(job).tasks[0].attempts[-1].started_at
        assert started_at is not None

        def sampled_cpu_s() -> float:
            (attempt,) = cluster.client().samples(job).attempts
            return attempt.cpu_average * (attempt.latest.at - started_at)

        wait_until(lambda: sampled_cpu_s() >= 0.9 * 2 * BURN_S, timeout=180,
                   describe=f"the samples to account for the {2 * BURN_S} s of CPU time the two burners used")

        samples = cluster.client().samples(job)
        assert len(samples.attempts) == 1
        attempt = samples.attempts[0]
        assert attempt.peak_bytes >= 190 * MIB and attempt.latest.processes >= 3 and len(attempt.history) >= 3
        assert all(s.cpu <= 2.3 for s in attempt.history), attempt  # at most the two reserved
        assert "python3" in attempt.latest.cmd  # the biggest process: the one holding the memory

        shown = cluster.drover("show", str(job)).stdout
        assert "memory: now" in shown and any(bar in shown for bar in "▂▃▄▅▆▇█"), shown
        frame = cluster.drover("top", "--once").stdout
        assert "JOB" in frame and "/2" in frame and str(job) in frame, frame
    finally:
        release.touch()  # the job ends, whatever was seen of it
    assert cluster.drover("wait", str(job)).returncode == 0
    assert not [row for row in cluster.drover_json("top") if row["job_id"] == job]
    assert cluster.client().samples(job).attempts == []


def test_a_node_daemon_killed_while_sampling_loses_samples_never_the_accounting_record(
        sampled_cluster: LocalCluster) -> None:
    """kill -9 of the execd (and its fork server) while a job runs and is sampled: the samples it
    had not sent are lost, and the job, which runs on under its shepherd, ends recorded once,
    with its usage, in the accounting records."""
    cluster = sampled_cluster
    hold = "python3 -c 'import time; block = b\"x\" * (40 << 20); time.sleep(4)'"
    job = cluster.submit("--name", "sampled", "--", "sh", "-c", hold)
    wait_until(lambda: any(row["job_id"] == job for row in cluster.drover_json("top")), timeout=30,
               describe="the job's first sample")
    cluster.kill("execd")
    cluster.start_execd()
    cluster.drover("wait", str(job), timeout=60)
    (record,) = [r for r in cluster.drover_json("history", "--name", "sampled") if r["job_id"] == job]
    assert record["state"] == "completed" and record["attempt"] == 1, record
    peak = max(record["cgroup_peak_bytes"] or 0, (record["max_rss_kib"] or 0) * 1024)
    assert peak >= 40 * MIB and record["wall_s"] >= 3, record
    assert not any(row["job_id"] == job for row in cluster.drover_json("top"))  # gone once it ended


def test_show_json_gives_the_live_samples_and_priority_the_text_shows(sampled_cluster: LocalCluster) -> None:
    """`drover show --json` holds everything `drover show` prints: under a running attempt, its
    live samples (the lines drawn from them are the text's, to the character), and for a
    waiting job, its multifactor priority."""
    import msgspec

    from drover.cli.usage_render import show_lines
    from drover.protocol.api import AttemptSamples

    cluster = sampled_cluster
    job = cluster.submit("--", "sh", "-c", "sleep 60")
    held = cluster.submit("--dependency", f"afterok:{job}", "--", "true")  # waits: pending, not held

    def agree() -> tuple[list[str], list[str]] | None:
        text = [line.strip() for line in cluster.drover("show", str(job)).stdout.splitlines()]
        shown = cluster.drover_json("show", str(job))
        live = shown["tasks"][0]["attempts"][-1]["live"]
        if live is None:
            return None
        lines = show_lines(msgspec.convert(live, AttemptSamples), shown["cpus"])
        drawn = [line for line in text if line.startswith(("memory: now", "CPU:    now", "processes "))]
        return (drawn, lines) if drawn == lines and len(live["history"]) >= 2 else None

    wait_until(agree, timeout=30, describe="the text's sample lines to be those drawn from --json's live samples")
    assert cluster.drover_json("show", str(job))["tasks"][0]["attempts"][-1]["enforced"] == []

    text = cluster.drover("show", str(held)).stdout
    factors = cluster.drover_json("show", str(held))["priority_factors"]
    assert factors is not None and f"multifactor {factors['total']:.2f}" in text, (text, factors)
    cluster.drover("cancel", str(job), str(held))
    cluster.drover("wait", str(job), check=False)
    ended = cluster.drover_json("show", str(job))
    assert ended["tasks"][0]["attempts"][-1]["live"] is None and ended["priority_factors"] is None
