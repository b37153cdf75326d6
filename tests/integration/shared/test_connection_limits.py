"""Anyone who can reach the local socket, before they are known, on a shared cluster started the
way docs/shared-machine.md says: a real unprivileged user's raw-socket programs (the install's python) send a
header without end, hold thousands of requests half sent, or send them a byte at a time; the
controller's memory and descriptors stay bounded, and other users, admins and the node are
served all along."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
from collections.abc import Callable, Iterator

import psutil
import pytest
from tests.helpers.flood import DRIBBLE, HALF_OPEN, HUGE_HEADER, PeakRss, open_descriptors, rss_kib
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.users import run_as_user, user_command
from tests.helpers.wait import wait_until

from drover.client import Client

MIB = 1024 * 1024


def controller(cluster: SystemCluster) -> psutil.Process:
    return next(d for d in cluster.daemons if "controller" in d.cmdline())


def idle_rss_kib(cluster: SystemCluster, user: str) -> int:
    """The controller's memory once it has answered a few ordinary requests."""
    for _ in range(3):
        assert cluster.run_as(user, "drover", "status").returncode == 0
    return rss_kib(controller(cluster).pid)


def probe(cluster: SystemCluster, user: str, code: str, *args: str, timeout: float = 120) -> dict[str, object]:
    result = run_as_user(user, [cluster.install.python, "-c", code, *args], timeout=timeout)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])  # type: ignore[no-any-return]


PER_HOLDER = 5000  # connections per holding process, well under its open-files limit


@contextlib.contextmanager
def holding(cluster: SystemCluster, user: str, count: int) -> Iterator[dict[str, int]]:
    """`count` connections to the local socket held by `user`, each with a request half sent,
    from as many processes as their open-files limit needs (a container's root may not raise it)."""
    holders: list[subprocess.Popen[str]] = []
    try:
        for start in range(0, count, PER_HOLDER):
            command, env = user_command(user, [cluster.install.python, "-c", HALF_OPEN, cluster.socket,
                                               str(min(PER_HOLDER, count - start))])
            holders.append(subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, text=True, cwd="/", start_new_session=True))
        totals = {"opened": 0, "answered_at_once": 0}
        for holder in holders:
            assert holder.stdout is not None
            counts = json.loads(holder.stdout.readline() or "null")
            if counts is None or holder.stdout.readline().strip() != "holding":
                holder.kill()
                raise AssertionError(f"a holder failed: {holder.communicate()[1]}")
            for key in totals:
                totals[key] += counts[key]
        yield totals
    finally:
        for holder in holders:
            if holder.stdin is not None:
                holder.stdin.close()
        for holder in holders:
            try:
                holder.wait(timeout=30)
            except subprocess.TimeoutExpired:
                holder.kill()
                holder.wait()


def node_states(cluster: SystemCluster) -> list[str]:
    with Client(cluster.socket, timeout_s=10) as root:
        return [node.state for node in root.nodes()]


def test_a_100_mib_header_is_refused_early_and_the_controllers_memory_stays_bounded(
        system_cluster: SystemCluster, users: tuple[str, str]) -> None:
    alice, bob = users
    idle = idle_rss_kib(system_cluster, bob)
    with PeakRss(controller(system_cluster).pid) as peak:
        sent = probe(system_cluster, alice, HUGE_HEADER, system_cluster.socket, str(100 * MIB))
    print(f"controller VmRSS: idle {idle} KiB, peak during a 100 MiB header {peak.peak_kib} KiB; sent {sent['sent']}")
    assert str(sent["reply"]).startswith("HTTP/1.1 431 "), sent
    assert "max_header_bytes" in str(sent["reply"])
    assert sent["state"] == "closed", sent
    # The answer came after the limit and what the socket buffers hold, far from the 100 MiB.
    assert int(sent["sent"]) < 4 * MIB, sent  # type: ignore[call-overload]
    assert peak.peak_kib < 2 * idle, (idle, peak.peak_kib)
    assert system_cluster.run_as(bob, "drover", "status").returncode == 0


def test_20000_half_sent_requests_of_one_user_leave_other_users_and_the_node_served(
        system_cluster_factory: Callable[..., SystemCluster], users: tuple[str, str]) -> None:
    # The half-sent requests are held as long as the test needs them (not timed out), so that
    # it is the limit per user that protects the others.
    cluster = system_cluster_factory(config_toml="[controller.connections]\nheader_timeout_s = 600\n")
    alice, bob = users
    idle = idle_rss_kib(cluster, bob)
    pid = controller(cluster).pid
    with PeakRss(pid) as peak, holding(cluster, alice, 20000) as counts:
        assert counts["opened"] == 20000
        assert counts["answered_at_once"] >= 20000 - 128  # refused at once, beyond alice's 128
        descriptors = open_descriptors(pid)
        assert descriptors < 128 + 200, descriptors
        assert cluster.run_as(bob, "drover", "status").returncode == 0
        assert cluster.as_root("status").returncode == 0
        assert node_states(cluster) == ["up"]
    print(f"controller VmRSS: idle {idle} KiB, peak while 20,000 half-sent requests were held {peak.peak_kib} KiB; "
          f"{descriptors} descriptors open")
    assert peak.peak_kib < 2 * idle, (idle, peak.peak_kib)
    assert "refused a connection on the local socket from uid " in (cluster.state_dir / "controller.log").read_text()


def test_when_every_ordinary_connection_is_taken_admins_and_a_reconnecting_node_still_get_in(
        system_cluster_factory: Callable[..., SystemCluster], users: tuple[str, str]) -> None:
    cluster = system_cluster_factory(config_toml=(
        "[controller.connections]\nheader_timeout_s = 600\nmax_connections_per_peer = 100000\n"
        "max_connections = 300\nreserved_connections = 50\n"))
    alice, bob = users
    with holding(cluster, alice, 1000) as counts:
        assert counts["answered_at_once"] >= 1000 - 250
        refused = cluster.run_as(bob, "drover", "status")
        assert refused.returncode != 0, refused.stdout
        assert "kept for nodes and admins" in refused.stderr, refused.stderr  # the reason, not a lost connection
        assert cluster.as_root("status").returncode == 0  # an admin, on the reserve
        restarted = restart_execd(cluster)
        try:
            wait_until(lambda: node_states(cluster) == ["up"]
                       and (cluster.state_dir / "execd.log").read_text().count("joined the cluster as node") >= 2,
                       timeout=60, describe="the restarted node to join again")
        finally:
            restarted.send_signal(signal.SIGTERM)
            restarted.wait(timeout=30)
    assert cluster.run_as(bob, "drover", "status").returncode == 0  # served again once alice let go


def restart_execd(cluster: SystemCluster) -> subprocess.Popen[bytes]:
    """kill -9 the node's execd and start it again as `drover up` did: it must reconnect."""
    old = next(d for d in cluster.daemons if "execd" in d.cmdline())
    command, environment, cwd = old.cmdline(), old.environ(), old.cwd()
    old.kill()
    old.wait(timeout=10)
    cluster.daemons.remove(old)
    with open(cluster.state_dir / "execd.log", "ab") as log:
        return subprocess.Popen(command, env=environment, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)


@pytest.mark.parametrize("what", ["head", "nothing", "body"])
def test_a_request_sent_a_byte_at_a_time_or_not_at_all_is_dropped_after_its_timeout(
        system_cluster_factory: Callable[..., SystemCluster], users: tuple[str, str], what: str) -> None:
    cluster = system_cluster_factory(config_toml=(
        "[controller.connections]\nheader_timeout_s = 1.0\nbody_timeout_s = 1.0\n"))
    alice, _ = users
    dropped = probe(cluster, alice, DRIBBLE, cluster.socket, what)
    assert dropped["state"] == "closed", dropped
    assert 0.9 <= float(dropped["after_s"]) < 10, dropped  # type: ignore[arg-type]
    if what == "head":
        assert str(dropped["reply"]).startswith("HTTP/1.1 408 "), dropped
        assert "header_timeout_s" in str(dropped["reply"])
    else:
        assert dropped["reply"] == "", dropped
