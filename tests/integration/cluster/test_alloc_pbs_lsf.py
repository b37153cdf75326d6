"""`drover alloc add pbs` and `drover alloc add lsf` against an outer scheduler that speaks PBS's
and LSF's commands: a second Drover cluster through its own front ends (`drover compat install
--flavor pbs` gives qsub, qstat, qdel; every flavour gives bsub, bjobs, bkill). The inner cluster
has no node of its own: its controller asks the outer one for allocations while jobs wait, each
allocation (a job of the outer cluster, run as root here) starts `drover alloc worker`, which
joins the inner cluster as node pbs-<job id>-<n> or lsf-<job id>-<n>; the jobs run there, and
idle or removed allocations end in the outer cluster too."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.outer_allocations import (
    allocating_cluster,
    job_pids,
    none_alive,
    pid_file_job,
    ran_once_on_allocations,
)
from tests.helpers.wait import wait_until

from drover.cluster.outer.base import by_name
from drover.core.allocations import AllocationState

pytestmark = [pytest.mark.xdist_group("outer_drover"), pytest.mark.timeout(900)]


@pytest.fixture
def outer() -> Iterator[LocalCluster]:
    """The outer scheduler: a personal cluster of one node (2 CPUs), with PBS's and LSF's
    commands installed in its directory. Its kill grace is as long as PBS's kill_delay and LSF's
    JOB_TERMINATE_INTERVAL (10 s by default) and more: an allocation it cancels has the time to
    end its node's jobs."""
    local = LocalCluster(cpus=2, kill_grace_s=15)
    try:
        local.start()
        local.drover("compat", "install", "--flavor", "pbs", str(local.root / "bin"))
        yield local
    except BaseException:
        print(local.logs())
        raise
    finally:
        local.stop()


@pytest.fixture
def inner(outer: LocalCluster) -> Iterator[LocalCluster]:
    """A cluster serving TLS on loopback, with no node of its own; its controller finds qsub,
    bsub... first on its PATH, and they reach the outer cluster (DROVER_SOCKET)."""
    path = f"{outer.root / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    with allocating_cluster(lambda: not _live(outer), "the allocations to end in the outer cluster",
                            controller_env={"PATH": path, "DROVER_SOCKET": outer.socket},
                            outer_logs=_outer_outputs) as local:
        yield local


def _outer_outputs(inner: LocalCluster) -> str:
    """The allocations' own output (the worker's words), for a failed test's report."""
    work = inner.state_dir / "alloc"
    found = sorted(work.glob("*.o*")) + sorted(work.glob("*.out")) if work.is_dir() else []
    return "\n".join(f"--- {path.name}\n{path.read_text(errors='replace')[-2000:]}" for path in found)


def _live(outer: LocalCluster) -> dict[int, str]:
    """The outer cluster's unfinished jobs that are allocations: id → state."""
    with outer.client() as client:
        return {job.id: job.state for job in client.jobs() if job.name.startswith("drover-")}


def _nodes(inner: LocalCluster, manager: str) -> list[dict[str, Any]]:
    return [node for node in inner.drover_json("nodes") if node["name"].startswith(f"{manager}-")]


def _info(inner: LocalCluster, queue: int = 1) -> dict[str, Any]:
    return dict(inner.drover_json("alloc", "info", str(queue)))


# PBS's qsub passes only the variables it is told (-V: all of qsub's, the outer cluster's
# DROVER_SOCKET with them, so the worker's qstat reaches it); bsub passes its whole environment.
EXTRA = {"pbs": ["--", "-V"], "lsf": []}


@pytest.mark.parametrize("manager", ["pbs", "lsf"])
def test_jobs_run_on_nodes_inside_allocations_of_the_outer_cluster_and_idle_ones_end(
        manager: str, outer: LocalCluster, inner: LocalCluster) -> None:
    added = inner.drover("alloc", "add", manager, "--time-limit", "10m", "--max-workers", "2", "--backlog", "2",
                         "--idle-timeout", "5s", "--name", "short", *EXTRA[manager])
    assert f"Added allocation queue 1 ({manager})" in added.stdout
    count = 40
    job = inner.submit("--array", f"1-{count}", "-t", "1m", "-o", str(inner.workdir / "out.%a"),
                       "--", "sh", "-c", 'echo "task $DROVER_TASK_ID"')
    seen_outer, seen_nodes, ends = ran_once_on_allocations(inner, job, count, manager, lambda: _live(outer))
    for index in range(1, count + 1):
        assert (inner.workdir / f"out.{index}").read_text() == f"task {index}\n"
    # Each node said when it goes: within its allocation's 10 minutes, less the 60 s margin (the
    # outer scheduler's own time left, qstat's walltime or bjobs's time_left, when it said).
    assert ends and all(time.time() < end <= time.time() + 600 - 60 for end in ends), ends
    info = _info(inner)
    assert info["manager"] == manager and info["state"] == "active" and info["failures"] == 0, info
    assert {a["outer_id"] for a in info["allocations"]} <= seen_outer
    # Idle for 5 s: the nodes leave and their outer jobs end.
    wait_until(lambda: not _live(outer) and not _nodes(inner, manager), timeout=120, interval=0.5,
               describe="the idle allocations to end")
    assert all(a["state"] == "ended" for a in _info(inner)["allocations"])


@pytest.mark.parametrize("manager", ["pbs", "lsf"])
def test_removing_the_queue_ends_its_allocations_and_the_jobs_running_there(manager: str, outer: LocalCluster,
                                                                            inner: LocalCluster) -> None:
    inner.drover("alloc", "add", manager, "--time-limit", "10m", "--max-workers", "1", "--idle-timeout", "10m")
    pids, command = pid_file_job(inner.workdir)
    job = inner.submit("-t", "5m", "--no-requeue", "--", *command)
    wait_until(lambda: inner.drover_json("show", str(job))["state"] == "running", timeout=120, interval=0.5,
               describe="the job to run inside an allocation")
    running = job_pids(pids)
    (outer_job,) = _live(outer)
    assert _nodes(inner, manager)[0]["name"] == f"{manager}-{outer_job}-0"
    # The outer scheduler's time left, as the worker asks it (qstat -f -F json, bjobs -o time_left):
    # at most the 10 minutes asked for, and most of them.
    adapter = by_name(manager)
    env = {**outer.env, "PATH": f"{outer.root / 'bin'}:{os.environ['PATH']}"}
    said = subprocess.run(adapter.time_left(str(outer_job)), capture_output=True, text=True, timeout=60, env=env)
    left = adapter.seconds_left(said.stdout)
    assert left is not None and 480 <= left <= 600, (said.stdout, said.stderr)
    # Asked of a live allocation and of one the outer scheduler does not know, the status
    # command fails but still answers for the live one: the unknown one has ended.
    said = subprocess.run(adapter.status("drover-", "root", [str(outer_job), "99999"]), capture_output=True,
                          text=True, timeout=60, env=env)
    assert said.returncode != 0 and adapter.answered(said.returncode, said.stdout, said.stderr), said
    assert adapter.states(said.stdout) == {str(outer_job): AllocationState.RUNNING}, said.stdout
    # The allocation's output is where the allocator looks for it (PBS: NAME.oSEQ in -o's directory).
    with outer.client() as client:
        name = client.job(outer_job).name
    output = adapter.output_file(str(inner.state_dir / "alloc" / f"{name}-%j.out"), name, str(outer_job))
    wait_until(lambda: os.path.exists(output) and "joined" in open(output).read(), timeout=30,
               describe=f"the worker's words in {output}")
    # Removed with the job running: the allocation is cancelled, and its node ends the job first.
    assert inner.drover_json("alloc", "remove", "1")["state"] == "removed"
    wait_until(lambda: not _live(outer), timeout=60, interval=0.5, describe="the outer job to end")
    # and the allocator sees it end at its next look at the outer scheduler
    wait_until(lambda: all(a["state"] == "ended" for a in _info(inner)["allocations"]), timeout=60, interval=0.5,
               describe="the allocations recorded ended")
    assert inner.drover_json("alloc", "list") == []
    # The job may not run again (--no-requeue): it ended as on a node's loss, NODE_FAIL, saying why.
    none_alive(running)
    why = f"node {manager}-{outer_job}-0 left: its {manager} allocation {outer_job} ended"
    shown = wait_until(lambda: (found := inner.drover_json("show", str(job)))["state"] == "node_fail" and found,
                       timeout=60, interval=0.5, describe="the job ended as its node left")
    (attempt,) = shown["tasks"][0]["attempts"]
    assert attempt["failure"] == why, attempt
    (record,) = inner.drover_json("history", "-j", str(job))
    assert record["reason"] == f"NodeLost: {why}", record
    wait_until(lambda: not _nodes(inner, manager), timeout=30, interval=0.5, describe="the node to be forgotten")


@pytest.mark.parametrize(("manager", "words"), [("pbs", "unknown queue"), ("lsf", "job not submitted")])
def test_a_refused_submission_is_reported_in_the_outer_schedulers_words(
        manager: str, words: str, outer: LocalCluster, inner: LocalCluster) -> None:
    inner.drover("alloc", "add", manager, "--queue", "nosuchqueue", "--max-workers", "1")
    inner.submit("-t", "1m", "--", "true")
    info = wait_until(lambda: (shown := _info(inner))["failures"] >= 1 and shown, timeout=60, interval=0.5,
                      describe="the refusal to be reported")
    assert words in (info["last_error"] or "").lower(), info
    assert info["state"] == "backing off" and info["allocations"] == []
    assert "queue:" in inner.drover("alloc", "info", "1").stdout  # PBS's and LSF's word
