"""What the allocation tests (tests/integration/cluster/test_alloc_*.py) check of any outer
scheduler: an array's tasks each ran once, on nodes inside its allocations; and a job on a node
whose allocation ended left nothing running."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def allocating_cluster(ended: Callable[[], bool], describe: str, timeout: float = 90,
                       env: dict[str, str] | None = None, controller_env: dict[str, str] | None = None,
                       outer_logs: Callable[[LocalCluster], str] | None = None) -> Iterator[LocalCluster]:
    """A Drover cluster serving TLS on loopback, with no node of its own, whose controller asks
    an outer scheduler for allocations (`env`: for every command of it; `controller_env`: for
    its controller only). On a failure its logs and `outer_logs()` are printed; at the end its
    allocation queues are removed and `ended()` (the outer scheduler holds no allocation of it)
    is waited for."""
    local = LocalCluster()
    local.env.update(env or {})
    try:
        local.drover("cluster", "init", "--state-dir", str(local.state_dir))
        local.controller = local._daemon("controller", "--kill-grace", "1", "--listen",
                                         f"127.0.0.1:{free_port()}", env=controller_env)
        wait_until(lambda: local.client().ping(), describe="the controller to answer")
        yield local
    except BaseException:
        print(local.logs())
        if outer_logs is not None:
            print(outer_logs(local))
        raise
    finally:
        if local.controller is not None:
            for queue in local.drover_json("alloc", "list") if local.controller.poll() is None else []:
                local.drover("alloc", "remove", str(queue["id"]), check=False)
            wait_until(ended, timeout=timeout, describe=describe)
        local.stop()


def attempts(local: LocalCluster, job: int) -> dict[int, list[dict[str, Any]]]:
    """Each task's attempts, as `drover show --json` gives them."""
    shown = local.drover_json("show", str(job))
    info = shown[0] if isinstance(shown, list) else shown
    return {task["index"]: task["attempts"] for task in info["tasks"]}


def ran_once_on_allocations(local: LocalCluster, job: int, count: int, prefix: str,
                            live_allocations: Callable[[], Iterable[str]],
                            timeout: float = 300) -> tuple[set[str], set[str], list[float]]:
    """Wait for array `job` of `count` tasks to end, noting meanwhile the outer scheduler's live
    allocations and the nodes named `<prefix>-<allocation>-<n>`; check that it completed and
    that every task ran once, on one of those nodes, of one of those allocations. Returns the
    allocations seen, the nodes seen and the ends the nodes said."""
    seen_outer: set[str] = set()
    seen_nodes: set[str] = set()
    ends: list[float] = []

    def done() -> bool:
        seen_outer.update(str(allocation) for allocation in live_allocations())
        nodes = [node for node in local.drover_json("nodes") if node["name"].startswith(f"{prefix}-")]
        seen_nodes.update(node["name"] for node in nodes)
        ends.extend(node["ends_at"] for node in nodes)
        return str(local.drover_json("show", str(job))["state"]) in ("completed", "failed", "cancelled")

    wait_until(done, timeout=timeout, interval=0.5, describe=f"job {job}'s {count} tasks to end")
    shown = local.drover_json("show", str(job))
    assert shown["state"] == "completed", shown
    assert seen_outer and seen_nodes, (seen_outer, seen_nodes)
    assert all(name.removeprefix(f"{prefix}-").rsplit("-", 1)[0] in seen_outer for name in seen_nodes), \
        (seen_nodes, seen_outer)
    tries_of = attempts(local, job)
    assert sorted(tries_of) == list(range(1, count + 1))
    # A node of an allocation seen: seen itself by the polling above, or one that came and left
    # between two of its looks (a loaded host), named after an allocation that was seen.
    assert all(len(tries) == 1 and of_allocation_seen(tries[0]["node"], prefix, seen_outer)
               for tries in tries_of.values()), (seen_outer, tries_of)
    return seen_outer, seen_nodes, ends


def of_allocation_seen(node: str, prefix: str, seen_outer: set[str]) -> bool:
    """Whether `node` is named `<prefix>-<allocation>-<n>` after one of the allocations seen."""
    allocation, _, index = node.removeprefix(f"{prefix}-").rpartition("-")
    return node.startswith(f"{prefix}-") and index.isdigit() and allocation in seen_outer


def pid_file_job(workdir: Path) -> tuple[Path, list[str]]:
    """A job that writes its shell's pid and its child's to a file, then waits: the processes a
    node that leaves must end. (the file, the job's command)"""
    pids = workdir / "job.pids"
    return pids, ["sh", "-c", f'sleep 300 & echo "$$ $!" > {pids}; wait']


def job_pids(pids: Path) -> list[int]:
    text = wait_until(lambda: pids.exists() and len(pids.read_text().split()) == 2 and pids.read_text(),
                      timeout=60, describe=f"the job to write its pids to {pids}")
    return [int(pid) for pid in str(text).split()]


def none_alive(pids: Iterable[int], timeout: float = 60) -> None:
    """Wait until no process of `pids` is left (a zombie, reaped by no one yet, counts as gone)."""
    def gone() -> bool:
        return all(not os.path.exists(f"/proc/{pid}") or _zombie(pid) for pid in pids)

    wait_until(gone, timeout=timeout, interval=0.5, describe=f"the job's processes {sorted(pids)} to end")


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as file:
            return file.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True
