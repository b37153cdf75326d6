"""Warm shepherds on a real node (two CPUs: two kept ready): a job's attempt is run by a
shepherd forked before its order, the next one by the same shepherd, and a node daemon stopped with warm shepherds waiting leaves
none of them behind (in a session of their own, no signal to the daemon's group reaches them),
nor the slots' cpusets its attempts kept (shepherd/containment/slots.py)."""

from __future__ import annotations

import glob
import signal
from collections.abc import Iterator

import psutil
import pytest
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.wait import wait_until

from drover.config import Paths, cluster_tag


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    yield from serve(request, LocalCluster(cpus=2))


def fork_server(cluster: LocalCluster) -> psutil.Process:
    assert cluster.execd is not None
    return wait_until(lambda: next((child for child in psutil.Process(cluster.execd.pid).children()  # type: ignore[union-attr]
                                    if "drover.execd.forkserver" in child.cmdline()), None),
                      describe="the node's fork server")


def waiting(shepherd: psutil.Process) -> bool:
    """Whether the shepherd waits for an order: nothing open but stdin, stdout, stderr and its
    socket to the fork server (one running an attempt holds its signal pipe and more)."""
    try:
        return shepherd.num_fds() <= 4
    except psutil.NoSuchProcess:
        return False


def warm(server: psutil.Process) -> set[int]:
    """The fork server's children once at least two wait and no attempt runs (shepherds back
    from an attempt wait beside those forked ahead)."""
    def found() -> set[int] | None:
        children = server.children()
        ready = {child.pid for child in children if waiting(child)}
        return ready if len(ready) >= 2 and len(ready) == len(children) else None

    return wait_until(found, describe="two warm shepherds, and none running an attempt")


def test_an_attempt_runs_in_a_shepherd_forked_before_its_order(cluster: LocalCluster) -> None:
    waiting = warm(fork_server(cluster))
    job = cluster.submit("-o", "parent", "--", "sh", "-c", "echo $PPID")  # the job's parent: its shepherd
    assert cluster.drover("wait", str(job)).returncode == 0
    assert int((cluster.workdir / "parent").read_text()) in waiting


def test_a_shepherd_back_from_an_attempt_runs_the_next_one(cluster: LocalCluster) -> None:
    """No fork for the next attempt: the shepherd that ran the last one, whose pages are its
    own by now, runs it (execd/warm_shepherds.py), and each attempt's records are its own."""
    server = fork_server(cluster)
    parents = []
    for n in range(3):
        warm(server)  # the last attempt's shepherd back, waiting with those forked ahead
        job = cluster.submit("-o", f"parent{n}", "--", "sh", "-c", "echo $PPID")
        assert cluster.drover("wait", str(job)).returncode == 0
        parents.append(int((cluster.workdir / f"parent{n}").read_text()))
        assert cluster.drover("show", str(job)).returncode == 0
    assert parents[1] == parents[0] and parents[2] == parents[0]


def test_a_node_daemon_stopped_with_warm_shepherds_leaves_none(cluster: LocalCluster) -> None:
    server = fork_server(cluster)
    job = cluster.submit("--", "true")
    assert cluster.drover("wait", str(job)).returncode == 0
    waiting = warm(server)
    assert cluster.execd is not None
    cluster.execd.send_signal(signal.SIGTERM)
    assert cluster.execd.wait(timeout=15) == 0
    cluster.execd = None
    # The daemon waits for its fork server, which reaps its warm shepherds before it exits.
    assert not server.is_running()
    assert [pid for pid in waiting if psutil.pid_exists(pid)] == []
    tag = cluster_tag(Paths(str(cluster.state_dir)))
    assert glob.glob(f"/sys/fs/cgroup/**/drover-{tag}/slot-*", recursive=True) == []
