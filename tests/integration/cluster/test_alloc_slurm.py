"""`drover alloc` against a real Slurm (Debian's 22.05, tests/helpers/slurm_outer.py): the
controller asks Slurm for allocations while jobs wait, `drover alloc worker` joins from inside
each as node slurm-<job id>-<n>, the jobs run there under Drover's shepherd, and idle or removed
allocations end in Slurm too. The Drover cluster has no node of its own: every job runs inside
an allocation."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.outer_allocations import attempts as attempts_of
from tests.helpers.outer_allocations import (
    job_pids,
    none_alive,
    pid_file_job,
    ran_once_on_allocations,
)
from tests.helpers.slurm_outer import Slurm, inner_cluster, ours, slurm_nodes, started
from tests.helpers.system_install import SystemInstall
from tests.helpers.wait import wait_until

pytestmark = [pytest.mark.xdist_group("outer_slurm"), pytest.mark.timeout(900)]


@pytest.fixture
def slurm() -> Iterator[Slurm]:
    with started() as outer:
        yield outer


@pytest.fixture
def drover(slurm: Slurm) -> Iterator[LocalCluster]:
    with inner_cluster(slurm) as local:
        yield local


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _info(local: LocalCluster, queue: int = 1) -> dict[str, Any]:
    return dict(local.drover_json("alloc", "info", str(queue)))


def test_jobs_run_on_nodes_inside_slurm_allocations_and_idle_ones_end(slurm: Slurm, drover: LocalCluster) -> None:
    added = drover.drover("alloc", "add", "slurm", "--time-limit", "10m", "--max-workers", "2", "--backlog", "2",
                          "--idle-timeout", "5s", "--name", "short")
    assert "Added allocation queue 1 (slurm)" in added.stdout
    count = 200
    job = drover.submit("--array", f"1-{count}", "-t", "1m", "-o", str(drover.workdir / "out.%a"),
                        "--", "sh", "-c", 'echo "task $DROVER_TASK_ID on $(hostname)"')
    seen_slurm, seen_nodes, ends = ran_once_on_allocations(drover, job, count, "slurm", lambda: ours(slurm))
    # Each node said when it goes: within its allocation's 10 minutes, less the 60 s margin.
    assert ends and all(time.time() < end <= time.time() + 600 - 60 for end in ends), ends
    for index in range(1, count + 1):
        assert (drover.workdir / f"out.{index}").read_text().startswith(f"task {index} on ")
    info = _info(drover)
    assert info["state"] == "active" and info["failures"] == 0
    assert len(info["allocations"]) >= 1 and all(a["outer_id"] in seen_slurm for a in info["allocations"])
    assert len(seen_nodes) <= 2 * len(info["allocations"])
    # Idle for 5 s: the nodes leave and their Slurm jobs end.
    wait_until(lambda: not ours(slurm) and not slurm_nodes(drover), timeout=120, interval=0.5,
               describe="the idle allocations to end")
    assert all(a["state"] == "ended" for a in _info(drover)["allocations"])
    events = drover.drover("events", "--json", check=False).stdout
    assert "alloc_submitted" in events


def test_a_refused_submission_is_reported_and_retried_only_after_a_back_off(slurm: Slurm,
                                                                             drover: LocalCluster) -> None:
    drover.drover("alloc", "add", "slurm", "--partition", "nosuchpartition", "--max-workers", "2")
    drover.submit("-t", "1m", "--", "true")
    info = wait_until(lambda: (shown := _info(drover))["failures"] >= 1 and shown, timeout=60, interval=0.5,
                      describe="the refusal to be reported")
    assert "invalid partition" in (info["last_error"] or "").lower(), info
    assert info["state"] == "backing off" and info["allocations"] == []
    # Not a hot loop: the next try waits for the back-off (10 s after the first failure).
    first = info["last_error_at"]
    time.sleep(5)
    again = _info(drover)
    assert again["failures"] == 1 and again["last_error_at"] == first, again
    listed = drover.drover("alloc", "list").stdout
    assert "backing off" in listed and "invalid partition" in listed.lower()
    metrics = subprocess.run(["curl", "-s", "--unix-socket", drover.socket, "http://controller/metrics"],
                             capture_output=True, text=True, timeout=60).stdout
    assert 'drover_allocation_failures_total{queue="1"} 1.0' in metrics, metrics[-2000:]
    assert "alloc_failed" in drover.drover("events", "--json").stdout


def test_removing_the_queue_ends_its_allocations_and_the_jobs_running_there(slurm: Slurm,
                                                                            drover: LocalCluster) -> None:
    drover.drover("alloc", "add", "slurm", "--time-limit", "10m", "--max-workers", "1", "--idle-timeout", "10m")
    pids, command = pid_file_job(drover.workdir)
    job = drover.submit("-t", "5m", "--", *command)
    wait_until(lambda: drover.drover_json("show", str(job))["state"] == "running", timeout=120, interval=0.5,
               describe="the job to run inside an allocation")
    running = job_pids(pids)
    (allocation,) = ours(slurm)
    removed = drover.drover_json("alloc", "remove", "1")
    assert removed["state"] == "removed"
    wait_until(lambda: not ours(slurm), timeout=60, interval=0.5, describe="Slurm to end the allocation")
    # and the allocator sees it end at its next look at Slurm
    wait_until(lambda: all(a["state"] == "ended" for a in _info(drover)["allocations"]), timeout=60, interval=0.5,
               describe="the allocations recorded ended")
    assert drover.drover_json("alloc", "list") == []
    # The job ended with its node, as on a node's loss: requeued (it may run again), its attempt
    # saying why; nothing of it runs on.
    none_alive(running)
    shown = wait_until(lambda: (found := drover.drover_json("show", str(job)))["state"] == "pending" and found,
                       timeout=60, interval=0.5, describe="the job requeued")
    (attempt,) = shown["tasks"][0]["attempts"]
    assert attempt["failure"] == f"node slurm-{allocation}-0 left: its slurm allocation {allocation} ended", attempt
    assert attempt["ended_at"] is not None
    events = drover.drover("events", str(job), "--json").stdout
    assert f"left: its slurm allocation {allocation} ended; requeued as a new attempt" in events, events
    # and the node, its attempt ended, is forgotten
    wait_until(lambda: not slurm_nodes(drover), timeout=30, interval=0.5, describe="the node to be forgotten")
    drover.drover("cancel", str(job))


def test_no_job_starts_that_would_outlast_its_allocation_and_none_is_lost(slurm: Slurm,
                                                                          drover: LocalCluster) -> None:
    # One node at a time, for 1 minute (6 s of margin): jobs of 30 s at most start there only
    # in its first 24 s, 2 at once (the node has 2 CPUs): 8 of the 6 s tasks at most; the rest
    # wait for the next allocation.
    drover.drover("alloc", "add", "slurm", "--time-limit", "1m", "--max-workers", "1", "--idle-timeout", "5m")
    count = 14
    job = drover.submit("--array", f"1-{count}", "-t", "30s", "--", "sleep", "6")
    wait_until(lambda: drover.drover_json("show", str(job))["state"] == "completed", timeout=400, interval=1,
               describe=f"job {job}'s tasks to complete")
    allocations = _info(drover)["allocations"]
    assert len(allocations) >= 2, allocations  # the first one ended with work left
    # Slurm's own start of each allocation: its node ends 60 s later, less the 6 s margin.
    starts = {job_id: time.mktime(time.strptime(start, "%Y-%m-%dT%H:%M:%S"))
              for job_id, start in (line.split("|") for line in slurm.run(
                  "squeue", "--noheader", "--states=all", "--format=%i|%S").stdout.split())}
    attempts = attempts_of(drover, job)
    assert sorted(attempts) == list(range(1, count + 1))
    assert len({tries[0]["node"] for tries in attempts.values()}) >= 2
    for index, tries in attempts.items():
        assert len(tries) == 1 and tries[0]["exit_code"] == 0 and not tries[0]["timed_out"], (index, tries)
        allocation = tries[0]["node"].split("-")[1]
        # Slurm's start is in whole seconds: a second's tolerance.
        assert tries[0]["started_at"] + 30 <= starts[allocation] + 60 - 6 + 1, (index, tries, starts)


def test_the_worker_refuses_to_run_outside_an_allocation(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "DROVER_JOIN_TOKEN": "drv1.x.y.z", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "drover", "alloc", "worker", "https://127.0.0.1:1",
                           "--time-limit", "60"], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode != 0
    assert "not inside a slurm allocation" in done.stderr


def test_a_user_without_root_runs_jobs_on_the_outer_clusters_nodes(slurm: Slurm, users: tuple[str, str],
                                                                  system_install: SystemInstall) -> None:
    """The personal case: on the "login node", an ordinary user starts their own cluster with
    `drover up --listen`, keeps its own node out of the way, adds an allocation queue; their
    jobs run inside Slurm allocations (as them, under Drover's shepherd, with their records)
    on nodes whose execd runs as them too."""
    from tests.helpers.users import run_as_user

    user = users[0]
    state = f"/tmp/{user}-drover"
    env = {"DROVER_STATE_DIR": state, "SLURM_CONF": str(slurm.conf)}

    def as_user(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = run_as_user(user, [system_install.drover, *argv], env=env, timeout=120)
        if check and done.returncode != 0:
            raise AssertionError(f"drover {' '.join(argv)}: {done.returncode}: {done.stderr}{done.stdout}")
        return done

    try:
        as_user("up", "--listen", f"127.0.0.1:{_port()}", "--cpus", "1", "--state-dir", state)
        login = socket.gethostname().split(".")[0]
        as_user("node", "drain", login, "--reason", "jobs go to the compute nodes")
        as_user("alloc", "add", "slurm", "--time-limit", "10m", "--max-workers", "2", "--idle-timeout", "5s")
        count = 20
        submitted = as_user("submit", "--parsable", "--array", f"1-{count}", "-t", "1m", "-o", f"{state}/out.%a",
                            "--", "sh", "-c", 'echo "$(id -un) $DROVER_TASK_ID"')
        job = submitted.stdout.split()[0]
        def shown() -> dict[str, Any]:
            found = json.loads(as_user("show", job, "--json").stdout)
            return dict(found[0] if isinstance(found, list) else found)

        wait_until(lambda: shown()["state"] in ("completed", "failed", "cancelled"), timeout=300, interval=1,
                   describe=f"job {job} to end")
        assert shown()["state"] == "completed", shown()
        tasks = shown()["tasks"]
        assert len(tasks) == count
        for task in tasks:
            (attempt,) = task["attempts"]
            assert attempt["node"].startswith("slurm-") and attempt["exit_code"] == 0, task
            assert attempt["usage"] is not None, task  # measured by the shepherd
            assert Path(f"{state}/out.{task['index']}").read_text() == f"{user} {task['index']}\n"
        # Slurm's jobs were the user's: the allocations ran as them.
        assert {entry.split("|")[1] for entry in slurm.run(
            "squeue", "--noheader", "--states=all", "--format=%i|%u|%j").stdout.split()
            if entry.endswith("-q1")} == {user}
        history = json.loads(as_user("history", "-j", job, "--json", "-n", "100").stdout)
        assert len(history) == count
        wait_until(lambda: not ours(slurm), timeout=120, interval=0.5, describe="the idle allocations to end")
    finally:
        as_user("alloc", "remove", "1", check=False)
        wait_until(lambda: not ours(slurm), timeout=60, describe="the allocations to end in Slurm")
        as_user("down", "--state-dir", state, check=False)
        shutil.rmtree(state, ignore_errors=True)  # the user's cluster, its outputs and logs


def test_an_allocation_that_ends_before_its_node_joins_is_a_failure_and_backs_off(slurm: Slurm,
                                                                                    drover: LocalCluster) -> None:
    # Slurm takes the submission, but its job cannot open its output file: it fails at once.
    drover.drover("alloc", "add", "slurm", "--max-workers", "1", "--", "--output=/nonexistent/dir/out")
    drover.submit("-t", "1m", "--", "true")
    info = wait_until(lambda: (shown := _info(drover))["failures"] >= 1 and shown, timeout=90, interval=0.5,
                      describe="the failed allocation to be reported")
    (allocation,) = info["allocations"]
    assert allocation["state"] == "failed" and allocation["nodes"] == [], allocation
    assert "ended before any of its nodes joined" in info["last_error"], info
    assert info["state"] == "backing off"
