"""Each job's process limit ([execd] pids_max, its cgroup's pids.max): a fork bomb stops there,
the node's other jobs keep running, and `drover show` says the job hit its limit."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until
from tests.integration.shepherd.test_containment import FORK_BOMB, pids_controller_unusable


@contextlib.contextmanager
def node_with_pids_max(limit: int) -> Iterator[LocalCluster]:
    """A started personal cluster whose node limits each job to `limit` processes (skips where
    no pids controller is writable); stopped after."""
    if pids_controller_unusable("cgroup-v1") and pids_controller_unusable("cgroup-v2"):
        pytest.skip("no writable pids controller here")
    cluster = LocalCluster(config_toml=f"[execd]\npids_max = {limit}\n")
    try:
        cluster.start()
        yield cluster
    finally:
        assert not cluster.stop()


def test_a_fork_bomb_stops_at_the_nodes_pids_max_and_show_says_so(tmp_path: Path) -> None:
    """1. A job loops, waiting for a file, on a node whose jobs may have 64 processes each.
    2. A fork bomb runs beside it and stops at 64. 3. `drover show` of the bomb says it hit its
    process limit; the other job, let go, forks 230 processes (30 at once, under its own limit
    of 64) and completes, none of its forks refused."""
    with node_with_pids_max(64) as cluster:
        gate = tmp_path / "go"
        other = cluster.submit("--", "bash", "-c", f"while [ ! -e {gate} ]; do sleep 0.05; done; "
                               "for i in $(seq 1 30); do sleep 0.5 & done; wait; for i in $(seq 1 200); do /bin/true; done")
        wait_until(lambda: cluster.drover_json("show", str(other))["tasks"][0]["state"] == "running",
                   describe="the other job to run")
        script = tmp_path / "bomb.sh"
        script.write_text(FORK_BOMB)
        bomb = cluster.submit(str(script))
        assert cluster.drover("wait", str(bomb), timeout=120).returncode == 0
        (attempt,) = cluster.drover_json("show", str(bomb))["tasks"][0]["attempts"]
        assert attempt["pids_max"] == 64 and attempt["pids_refused"] >= 1
        shown = cluster.drover("show", str(bomb)).stdout
        assert "hit its process limit of 64" in shown and "pids_max in [execd]" in shown
        assert cluster.drover_json("show", str(other))["tasks"][0]["state"] == "running"
        gate.touch()
        assert cluster.drover("wait", str(other), timeout=120).returncode == 0
        (other_attempt,) = cluster.drover_json("show", str(other))["tasks"][0]["attempts"]
        assert other_attempt["exit_code"] == 0 and other_attempt["pids_refused"] == 0


def test_a_job_may_ask_a_lower_process_limit_than_its_nodes(tmp_path: Path) -> None:
    """`drover submit --pids-max 32` on a node whose own limit is 100: the job's fork bomb stops
    at 32; one asking more than its node's (5000) gets the node's."""
    with node_with_pids_max(100) as cluster:
        script = tmp_path / "bomb.sh"
        script.write_text(FORK_BOMB)
        own = cluster.submit("--pids-max", "32", str(script))
        more = cluster.submit("--pids-max", "5000", str(script))
        assert cluster.drover("wait", str(own), str(more), timeout=120).returncode == 0
        limits = [cluster.drover_json("show", str(job))["tasks"][0]["attempts"][0]["pids_max"] for job in (own, more)]
        assert limits == [32, 100]
        assert "hit its process limit of 32" in cluster.drover("show", str(own)).stdout
