"""Reservation against use on a real node (subreaper containment: no cgroup limit acts): a job
with one CPU whose processes spin on two cores is reniced, its nice read from /proc, and the
event is recorded and shown; a job that asks for 50 MiB and takes 150 MiB is warned in its error
file and ends OUT_OF_MEMORY."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from tests.helpers.attempts import kill_all, processes_with_argument
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.wait import wait_until

CONFIG = """[execd]
sample_s = 1.0
enforce_cpu = "on"
enforce_memory = "on"
cpu_tolerance = 0.1
"""
SPINNERS = 8  # on two cores: over one CPU even while other work shares this host (CFS shares by thread)
CPU_WINDOW = 3  # the node renices on the mean of this many samples (execd/enforcement.py)


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    yield from started(request, CONFIG)


@pytest.fixture
def lenient_cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """A node that warns and renices over the request, and kills only over three times it."""
    yield from started(request, CONFIG + "memory_hard_factor = 3.0\n")


def started(request: pytest.FixtureRequest, config: str) -> Iterator[LocalCluster]:
    def start(local: LocalCluster) -> None:
        local.start_controller()
        local.start_execd(DROVER_CONTAINMENT="subreaper")  # no cgroup: nothing else holds the job

    yield from serve(request, LocalCluster(config_toml=config), start)


def nice_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as file:
        return int(file.read().rsplit(")", 1)[1].split()[16])  # field 19 of the line


def events(cluster: LocalCluster, job: int, kind: str) -> list[dict[str, Any]]:
    """The details of the job's events of that kind."""
    with cluster.client() as api:
        return [dict(e.detail) for e in api.events(job) if e.kind == kind]


def best_mean(values: list[float], window: int) -> float:
    """The highest mean of `window` consecutive values (0 when there are fewer)."""
    means = [sum(values[i:i + window]) / window for i in range(len(values) - window + 1)]
    return max(means, default=0.0)


def test_a_job_over_its_cpus_is_reniced(cluster: LocalCluster) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("two CPUs are needed to use more than one")
    marker = f"spin-{uuid.uuid4().hex}"
    # Each process widens the affinity it was given (one CPU) to two: plain affinity does not hold it.
    spin = f"python3 -c 'import os; os.sched_setaffinity(0, {{0, 1}})\nwhile True: pass' {marker}"
    job = cluster.submit("--cpus", "1", "--", "sh", "-c", f"{spin} & " * SPINNERS + "wait")
    try:
        used: list[float] = []

        def reniced() -> list[dict[str, Any]]:
            used.extend(row["cpu"] for row in cluster.drover_json("top") if row["job_id"] == job)
            return events(cluster, job, "reniced")

        try:
            wait_until(reniced, timeout=40, describe="the job to be reniced", interval=1.0)
        except AssertionError:
            # The node acts on the mean of CPU_WINDOW samples, not on one: where the host's other
            # work never left the job a second core for that long, there was nothing to act on.
            best = best_mean(used, CPU_WINDOW)
            if best <= 1.1:
                pytest.skip(f"this host is too busy: the job never used more than {best:.2f} CPUs "
                            f"over {CPU_WINDOW} samples running")
            raise
        detail = events(cluster, job, "reniced")[0]
        assert detail["reason"] == "cpu" and detail["cpus"] == 1 and detail["nice_to"] > detail["nice_from"]
        assert detail["cpu"] >= detail["limit"] == 1.1  # over the limit; shown to two places, so it may read equal
        spinners = processes_with_argument(marker)
        assert len(spinners) == SPINNERS
        assert all(nice_of(p.pid) >= detail["nice_to"] for p in spinners)
        shown = cluster.drover("show", str(job)).stdout
        assert f"reniced from {detail['nice_from']} to {detail['nice_to']}: it used" in shown
        assert "over its 1 reserved" in shown
        why = cluster.drover("why", str(job)).stdout
        assert f"it: reniced from {detail['nice_from']} to {detail['nice_to']}: it used" in why, why
    finally:
        cluster.drover("cancel", str(job))
        cluster.drover("wait", str(job), check=False, timeout=60)
        kill_all(processes_with_argument(marker))


def test_a_job_over_its_memory_is_warned_and_ends_out_of_memory(cluster: LocalCluster) -> None:
    take = "python3 -c 'import time; block = b\"x\" * (150 << 20); time.sleep(60)'"  # every page resident
    job = cluster.submit("--mem", "50M", "--error", "job.err", "--", "sh", "-c", take)
    cluster.drover("wait", str(job), check=False, timeout=90)
    shown = cluster.drover_json("show", str(job))
    assert shown["state"] == "out_of_memory", shown
    (detail,) = events(cluster, job, "killed_over_memory")
    assert detail["requested_mib"] == 50 and detail["limit_mib"] == 75.0 and detail["memory_mib"] > 75  # 1.5 × the request, by default
    wait_until(lambda: f"drover: job {job} (attempt 1): killed: out of memory: it used" in (
        cluster.workdir / "job.err").read_text(), timeout=20, describe="the line in the job's error file")
    text = cluster.drover("show", str(job)).stdout
    assert "killed over its memory" in text
    assert "out of memory: it used more than its 50 MiB memory limit (--mem 50M)" in text, text


def test_a_job_over_its_memory_request_is_reniced_and_warned(lenient_cluster: LocalCluster) -> None:
    cluster = lenient_cluster
    marker = f"take-{uuid.uuid4().hex}"
    take = f"python3 -c 'import time; block = b\"x\" * (100 << 20); time.sleep(60)' {marker}"
    job = cluster.submit("--mem", "50M", "--error", "job.err", "--", "sh", "-c", take)
    try:
        wait_until(lambda: events(cluster, job, "reniced"), timeout=30, describe="the job to be reniced",
                   interval=0.5)
        (warning,) = events(cluster, job, "memory_warning")
        assert warning["requested_mib"] == 50 and warning["memory_mib"] > 50
        (detail,) = events(cluster, job, "reniced")
        assert detail["reason"] == "memory" and detail["nice_to"] > detail["nice_from"]
        (taker,) = processes_with_argument(marker)
        assert nice_of(taker.pid) == detail["nice_to"]
        wait_until(lambda: "drover: warning" in (cluster.workdir / "job.err").read_text(), timeout=20,
                   describe="the warning in the job's error file")
        shown = cluster.drover("show", str(job)).stdout
        assert f"reniced from {detail['nice_from']} to {detail['nice_to']}: it used" in shown
        assert "memory warning" in shown
        assert cluster.drover_json("show", str(job))["state"] == "running"  # under the hard limit
    finally:
        cluster.drover("cancel", str(job))
        cluster.drover("wait", str(job), check=False, timeout=60)
        kill_all(processes_with_argument(marker))
