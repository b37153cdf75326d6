"""Several workers per allocation, against a real Slurm of two nodes (two slurmd on this host,
tests/helpers/slurm_outer.py): `drover alloc add slurm --workers-per-alloc 2` asks for one
allocation of two nodes; srun starts `drover alloc worker` on each, and each joins the cluster
as a node of its own, slurm-<job id>-0 and slurm-<job id>-1, with the allocation's one token
(good for two joins); the jobs run on both; idle, the two leave and the allocation ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.slurm_outer import Slurm, inner_cluster, ours, slurm_nodes, started
from tests.helpers.wait import wait_until

pytestmark = [pytest.mark.xdist_group("outer_slurm"), pytest.mark.timeout(900)]


@pytest.fixture
def slurm() -> Iterator[Slurm]:
    with started(nodes=2) as outer:
        yield outer


@pytest.fixture
def drover(slurm: Slurm) -> Iterator[LocalCluster]:
    with inner_cluster(slurm) as local:
        yield local


def test_an_allocation_of_two_workers_starts_two_nodes_under_distinct_names(slurm: Slurm,
                                                                            drover: LocalCluster) -> None:
    drover.drover("alloc", "add", "slurm", "--workers-per-alloc", "2", "--max-workers", "2", "--time-limit", "10m",
                  "--idle-timeout", "5s")
    count = 16
    job = drover.submit("--array", f"1-{count}", "-t", "1m", "--", "sleep", "3")
    wait_until(lambda: len([n for n in slurm_nodes(drover) if n["state"] == "up"]) == 2, timeout=180, interval=0.5,
               describe="two nodes to join from the allocation")
    (allocation,) = ours(slurm)
    assert sorted(node["name"] for node in slurm_nodes(drover)) == [f"slurm-{allocation}-0", f"slurm-{allocation}-1"]
    # One Slurm job of two nodes, the one the queue shows, with both nodes.
    shown = slurm.run("squeue", "--noheader", f"--jobs={allocation}", "--format=%D|%N").stdout.strip()
    assert shown == "2|n[1-2]", shown
    info = drover.drover_json("alloc", "info", "1")
    (listed,) = info["allocations"]
    assert listed["outer_id"] == allocation and listed["workers"] == 2, listed
    assert listed["nodes"] == [f"slurm-{allocation}-0", f"slurm-{allocation}-1"], listed
    wait_until(lambda: drover.drover_json("show", str(job))["state"] == "completed", timeout=300, interval=1,
               describe=f"job {job}'s tasks to complete")
    shown_job = drover.drover_json("show", str(job))
    tasks = (shown_job[0] if isinstance(shown_job, list) else shown_job)["tasks"]
    assert sorted(task["index"] for task in tasks) == list(range(1, count + 1))
    assert all(len(task["attempts"]) == 1 and task["attempts"][0]["exit_code"] == 0 for task in tasks), tasks
    # Both nodes ran tasks: 16 tasks of 3 s are 24 s on one node's 2 CPUs, longer than the
    # other's join takes.
    assert {task["attempts"][0]["node"] for task in tasks} == {f"slurm-{allocation}-0", f"slurm-{allocation}-1"}
    # Idle for 5 s: both nodes leave, and the one allocation ends in Slurm.
    wait_until(lambda: not ours(slurm) and not slurm_nodes(drover), timeout=120, interval=0.5,
               describe="the idle allocation to end")
    assert [a["state"] for a in drover.drover_json("alloc", "info", "1")["allocations"]] == ["ended"]
