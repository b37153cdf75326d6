"""What tests of a running attempt look at from outside: its shepherd, its cgroups, the
processes it left, on a cluster whose execd runs one containment backend."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from drover.config import Paths, cluster_tag
from drover.spool import layout
from drover.spool.process import is_alive, read_pid_record
from tests.helpers.attempt_config import CLUSTER
from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

BACKENDS = ("cgroup-v2", "cgroup-v1", "subreaper")


def backend_unusable(backend: str) -> str | None:
    """None if the backend can run here, else why not."""
    from drover.shepherd.containment import choose

    os.environ["DROVER_CONTAINMENT"] = backend
    try:
        made = choose("probe.0.1", 0, cluster=CLUSTER)  # its cgroups where the run clears them
    except (RuntimeError, OSError) as error:
        return f"{backend} is not usable here: {error}"
    finally:
        del os.environ["DROVER_CONTAINMENT"]
    made.remove()
    return None


@pytest.fixture(params=BACKENDS)
def backend_cluster(request: pytest.FixtureRequest) -> Iterator[tuple[LocalCluster, str]]:
    """A cluster whose execd runs every attempt in the backend of the parameter (skipped where
    this host cannot run it)."""
    why_not = backend_unusable(request.param)
    if why_not:
        pytest.skip(why_not)
    local = LocalCluster()
    try:
        local.start_controller()
        local.start_execd(DROVER_CONTAINMENT=request.param)
    except BaseException:
        print(local.logs())
        local.stop()
        raise
    yield local, request.param
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(local.logs())
    problems = local.stop()
    assert not problems, "; ".join(problems)


def attempt_cgroups(cluster: LocalCluster) -> list[str]:
    """The cluster's attempt cgroups, in every hierarchy (v1 and v2); not the slots' cpusets,
    which are kept between attempts (shepherd/containment/slots.py)."""
    tag = cluster_tag(Paths(str(cluster.state_dir)))
    return [path for path in glob.glob(f"/sys/fs/cgroup/**/drover-{tag}/*", recursive=True)
            if os.path.isdir(path) and not os.path.basename(path).startswith("slot-")]


def shepherd_pid(cluster: LocalCluster, attempt: str) -> int:
    """The live shepherd of `attempt` (waits for its pid record)."""
    spool = layout.SpoolDir(str(cluster.spool), attempt)
    record = wait_until(lambda: read_pid_record(spool.record(layout.PID)), describe=f"the shepherd of {attempt}")
    assert is_alive(*record)
    return record[0]


def processes_with_argument(marker: str) -> list[psutil.Process]:
    """Live processes whose command line holds `marker` (a test's escapees)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if marker in (process.info["cmdline"] or []) and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.NoSuchProcess:
            pass
    return found


def kill_all(processes: list[psutil.Process]) -> None:
    for process in processes:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass


def escaping_lines(marker: str) -> str:
    """Bash that leaves three escapees behind, each running `sleep <marker>`: one in the job's
    process group, one orphaned by a double fork, one in a session of its own."""
    return (f"sleep {marker} &\n"
            f"( ( sleep {marker} & ) & )\n"
            f"setsid sleep {marker} &\n")


def read_kept(cluster: LocalCluster, attempt: str, record: str) -> str:
    return (Path(cluster.spool) / "kept" / attempt / record).read_text()
