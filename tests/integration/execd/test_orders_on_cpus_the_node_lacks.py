"""A real node daemon (`drover execd`, its fork server and real shepherds) against a controller
played by the test on the execd's socket, which sends what an honest controller never does:
orders on CPUs the node does not offer (its hello's count) or on a CPU twice, as a controller
taken over might (docs/security.md). The node refuses each before anything of it is made, starts
nothing, and tells the controller at once (an attempt it could not prepare: the controller
requeues the job); the good orders that follow run as ever. A parallel task's start order on such
CPUs is refused the same way, and reported as the task's end.

And the crash window of a start in place: the node daemon killed after recording a promise's
move (its `moved` record) and before starting it, then started again with fewer CPUs than the
move names. It does not finish the move: the attempt ends unstarted, its end reported, and the
attempt it followed runs on.

Last, on a real cluster, the controller's side of a node back with fewer CPUs: an order its
node daemon never read, on a CPU it no longer offers, is not sent again; the job waits again."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.attempt_config import attempt_config
from tests.helpers.cluster import LocalCluster, remove_cluster_cgroups, serve
from tests.helpers.wait import wait_until
from websockets.asyncio.server import ServerConnection, unix_serve
from websockets.exceptions import ConnectionClosed

from drover.config import Paths, cluster_tag
from drover.execd.lost_shepherd import end_attempt
from drover.protocol.node_channel import (
    Ack,
    Exited,
    Hello,
    PeTaskExited,
    Started,
    StartPromisedNow,
    Welcome,
    encoder,
    node_decoder,
)
from drover.spool import layout
from drover.spool.process import is_alive, read_pid_record

FIRST, SECOND, REFUSED, GOOD = "7.0.1", "8.0.1", "9.0.1", "10.0.1"


class Node:
    """A state directory, the node daemon started on it (again, after a kill), and the test's end
    of its channel: every message the node sent, and the way to send it orders."""

    def __init__(self) -> None:
        # Short: a Unix socket's path must fit in 108 bytes.
        self.root = Path(tempfile.mkdtemp(prefix="drv-", dir="/tmp"))
        self.state_dir, self.work = self.root / "state", self.root / "work"
        self.state_dir.mkdir()
        self.work.mkdir()
        self.spool = self.state_dir / "spool"
        self.socket = str(self.state_dir / "api.sock")
        self.received: list[Any] = []
        self.channel: ServerConnection | None = None
        self.execd: subprocess.Popen[bytes] | None = None

    def start_execd(self, cpus: int) -> None:
        with open(self.state_dir / "execd.log", "ab") as log:
            self.execd = subprocess.Popen(
                [sys.executable, "-m", "drover", "execd", "--state-dir", str(self.state_dir), "--socket", self.socket,
                 "--spool", str(self.spool), "--cpus", str(cpus), "--memory", "1024", "--node-name", "n1"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, process_group=0)

    def kill_execd(self) -> None:
        """kill -9 of the node daemon alone: the shepherds it started (each in a session of its
        own) go on."""
        assert self.execd is not None
        os.kill(self.execd.pid, signal.SIGKILL)
        self.execd.wait()
        self.execd = None

    async def serve(self, connection: ServerConnection) -> None:
        """The controller's end: welcome the node, keep what it says, acknowledge each end it reports."""
        self.channel = connection
        with contextlib.suppress(ConnectionClosed):  # the node daemon killed
            async for frame in connection:
                for message in node_decoder.decode(frame.encode() if isinstance(frame, str) else frame):
                    self.received.append(message)
                    if isinstance(message, Hello):
                        await connection.send(encoder.encode([Welcome(message.node, 60.0)]).decode())
                    elif isinstance(message, Exited):
                        await connection.send(encoder.encode([Ack([message.attempt])]).decode())

    async def send(self, frame: str) -> None:
        assert self.channel is not None
        await self.channel.send(frame)

    def of(self, kind: type, attempt: str | None = None) -> list[Any]:
        return [m for m in self.received if isinstance(m, kind) and (attempt is None or m.attempt == attempt)]

    def hellos(self) -> list[Hello]:
        return self.of(Hello)

    def log(self) -> str:
        path = self.state_dir / "execd.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        """The node daemon stopped, every shepherd and job left killed, their cgroups and the
        directory removed."""
        if self.execd is not None:
            self.execd.send_signal(signal.SIGTERM)
            try:
                self.execd.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.execd.pid, signal.SIGKILL)
                self.execd.wait()
        if self.spool.is_dir():
            for name in layout.attempt_names(str(self.spool)):
                spool = layout.SpoolDir(str(self.spool), name)
                record = read_pid_record(spool.record(layout.PID))
                if record is not None and is_alive(*record):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(record[0], signal.SIGKILL)
                end_attempt(spool)  # every process of its cgroups killed, the cgroups removed
        remove_cluster_cgroups(cluster_tag(Paths(str(self.state_dir))))
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def node() -> Iterator[Node]:
    made = Node()
    try:
        yield made
    finally:
        made.stop()


async def until(condition: Callable[[], object], node: Node, describe: str, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, f"timed out waiting for {describe}\n--- execd.log ---\n{node.log()[-4000:]}"
        await asyncio.sleep(0.05)


def order(node: Node, name: str, script: str, cpu_ids: str, after: str | None = None) -> str:
    """A start order's frame as the controller would send it, with the CPU ids written as given
    (a controller taken over may write any number)."""
    owner = pwd.getpwuid(os.geteuid()).pw_name
    config = {**attempt_config(str(node.work), name, owner=owner, node="n1"), "cpu_ids": "CPUS"}
    message: dict[str, Any] = {"type": "start", "attempt": name, "config": config, "script": script}
    if after is not None:
        message["after"] = after
    return json.dumps([message]).replace('"CPUS"', cpu_ids)


# CPU ids a controller taken over may send a node of two CPUs: beyond it, far beyond, one of a
# thousand digits, negative, and one named twice.
HOSTILE_CPU_IDS = ["[2]", "[1, 2]", "[65536]", "[" + "9" * 1000 + "]", "[-1]", "[0, 0]"]


def test_orders_on_cpus_the_node_lacks_start_nothing_and_are_reported(node: Node) -> None:
    marker = node.work / "refused.ran"

    async def scenario() -> None:
        async with unix_serve(node.serve, node.socket, max_size=2**26):
            node.start_execd(cpus=2)
            await until(lambda: node.hellos(), node, "the node's hello")
            assert node.hellos()[0].cpus == 2
            for cpu_ids in HOSTILE_CPU_IDS:
                await node.send(order(node, REFUSED, f"touch {marker}\n", cpu_ids))
            await until(lambda: len(node.of(Exited, REFUSED)) == len(HOSTILE_CPU_IDS), node, "a report of each refusal")
            for report in node.of(Exited, REFUSED):
                assert report.exit_status["node_fault"] is True and report.exit_status["exit_code"] is None
                assert report.exit_status["failure"].startswith("the node refused the order's CPUs: ")
            failures = [report.exit_status["failure"] for report in node.of(Exited, REFUSED)]
            assert failures[0].endswith("CPU 2 is not one this node offers (it offers CPUs 0 to 1)")
            assert failures[-1].endswith("CPU 0 is named twice")
            assert not node.of(Started, REFUSED)
            assert not (node.spool / REFUSED).exists() and not marker.exists()

            # The node goes on: a good order runs, on a real shepherd, and ends as ever.
            await node.send(order(node, GOOD, f"touch {node.work / 'good.ran'}\n", "[1, 0]"))
            await until(lambda: node.of(Exited, GOOD), node, "the good order's end")
            (ended,) = node.of(Exited, GOOD)
            assert ended.exit_status["exit_code"] == 0 and (node.work / "good.ran").exists()
            assert node.of(Started, GOOD) and not marker.exists()
            await asyncio.sleep(0.5)  # a refused order made nothing a shepherd could still run
            assert not marker.exists() and not (node.spool / REFUSED).exists()

    asyncio.run(scenario())


def task_order(node: Node, name: str, petask: str, script: str, cpu_ids: str) -> str:
    """A parallel task's start order's frame, its CPU ids written as given."""
    owner = pwd.getpwuid(os.geteuid()).pw_name
    config = {**attempt_config(str(node.work), name, owner=owner, node="n1", pe_task=petask), "cpu_ids": "CPUS"}
    message = {"type": "start_pe_task", "attempt": name, "petask": petask, "config": config, "script": script}
    return json.dumps([message]).replace('"CPUS"', cpu_ids)


def test_parallel_task_orders_on_cpus_the_node_lacks_start_nothing_and_are_reported(node: Node) -> None:
    """The same of a task of a parallel job on one of its hosts (StartPeTask): each refused before
    anything of it is made, and reported as the task's end; a good task runs after them."""
    marker = node.work / "task.ran"

    async def scenario() -> None:
        async with unix_serve(node.serve, node.socket, max_size=2**26):
            node.start_execd(cpus=2)
            await until(lambda: node.hellos(), node, "the node's hello")
            for cpu_ids in HOSTILE_CPU_IDS:
                await node.send(task_order(node, REFUSED, "1", f"#!/bin/bash\nexec touch {marker}\n", cpu_ids))
            await until(lambda: len(node.of(PeTaskExited, REFUSED)) == len(HOSTILE_CPU_IDS), node, "a report of each refusal")
            failures = [report.exit_status["failure"] for report in node.of(PeTaskExited, REFUSED)]
            assert all(why.startswith("the node refused the task's CPUs: ") for why in failures), failures
            assert failures[0].endswith("CPU 2 is not one this node offers (it offers CPUs 0 to 1)")
            assert failures[-1].endswith("CPU 0 is named twice")
            assert not (node.spool / REFUSED).exists() and not marker.exists()

            await node.send(task_order(node, GOOD, "1", f"#!/bin/bash\nexec touch {marker}\n", "[1]"))
            await until(lambda: node.of(PeTaskExited, GOOD), node, "the good task's end")
            (ended,) = node.of(PeTaskExited, GOOD)
            assert ended.exit_status["exit_code"] == 0 and marker.exists()
            assert not (node.spool / REFUSED).exists()

    asyncio.run(scenario())


def test_a_node_restarted_with_fewer_cpus_does_not_finish_a_move_onto_one_it_lost(node: Node) -> None:
    """Two CPUs: FIRST runs on CPU 0 until a gate exists, SECOND is promised behind it. The node
    daemon is killed after it recorded SECOND's move to CPU 1 (written here as it writes it: the
    window between the record and the start) and comes back offering one CPU."""
    gate, second_ran = node.work / "gate", node.work / "second.ran"

    async def scenario() -> None:
        async with unix_serve(node.serve, node.socket, max_size=2**26):
            node.start_execd(cpus=2)
            await until(lambda: node.hellos(), node, "the node's hello")
            await node.send(order(node, FIRST, f"until [ -e {gate} ]; do sleep 0.02; done\n", "[0]"))
            await node.send(order(node, SECOND, f"touch {second_ran}\n", "[0]", after=FIRST))
            await until(lambda: node.of(Started, FIRST), node, "the first attempt to start")
            await until(lambda: (node.spool / SECOND / layout.CONFIG).exists(), node, "the promise prepared")

            node.kill_execd()
            (node.spool / SECOND / layout.MOVED).write_text("[1]")
            hellos = len(node.hellos())
            node.start_execd(cpus=1)
            await until(lambda: len(node.hellos()) > hellos, node, "the restarted node's hello")
            hello = node.hellos()[-1]
            assert hello.cpus == 1
            assert {known.attempt: (known.running, known.promised) for known in hello.attempts} == {
                FIRST: (True, False), SECOND: (False, False)}  # SECOND ended: its report is under way
            await until(lambda: node.of(Exited, SECOND), node, "the unstarted attempt's end")
            (ended,) = node.of(Exited, SECOND)
            assert ended.exit_status["node_fault"] is True and ended.exit_status["exit_code"] is None
            assert ended.exit_status["failure"] == ("the node could not start the attempt after its restart: "
                                                    "CPU 1 is not one this node offers (it offers CPU 0)")
            assert not node.of(Started, SECOND)

            # A repeat of the move (the controller's, after the hello) finds no promise to start.
            await node.send(encoder.encode([StartPromisedNow(SECOND, [0])]).decode())
            gate.touch()
            await until(lambda: node.of(Exited, FIRST), node, "the first attempt's end")
            assert node.of(Exited, FIRST)[0].exit_status["exit_code"] == 0
            await asyncio.sleep(0.5)
            assert not second_ran.exists() and not node.of(Started, SECOND)

    asyncio.run(scenario())


# The controller's side, on a real cluster: a node daemon restarted with fewer CPUs, whose
# predecessor never read the order of an attempt placed on a CPU it no longer offers. The
# controller does not send that order again (the node would refuse it): the attempt ends there,
# never started, and the job waits for room the node has.

@pytest.fixture
def two_cpus(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    yield from serve(request, LocalCluster(cpus=2))


def test_an_order_a_node_back_with_fewer_cpus_never_read_is_requeued_not_sent_again(two_cpus: LocalCluster) -> None:
    cluster = two_cpus
    gate, runs = cluster.workdir / "gate", cluster.workdir / "second.runs"
    first = cluster.submit("--", "sh", "-c", f"until [ -e {gate} ]; do sleep 0.02; done")
    wait_until(lambda: cluster.drover_json("show", str(first))["state"] == "running", describe="the first job running")
    assert cluster.execd is not None
    os.kill(cluster.execd.pid, signal.SIGSTOP)  # the next order waits, unread, in its socket
    try:
        second = cluster.submit("--", "sh", "-c", f"date +%s.%N >> {runs}")
        wait_until(lambda: len(shown_attempts(cluster, second)) == 1, describe="the second job dispatched")
        (dispatched,) = shown_attempts(cluster, second)
        assert dispatched["cpu_ids"] == [1] and dispatched["started_at"] is None
        time.sleep(0.2)  # the order, sent after the commit in the same turn, is in the node's socket
    finally:
        cluster.kill("execd")  # stopped: the order is never read
    cluster.cpus = 1
    cluster.start_execd()
    wait_until(lambda: cluster.drover_json("show", str(second))["tasks"][0]["attempts"][0].get("ended_at"),
               describe="the second job's first attempt ended")
    show = cluster.drover_json("show", str(second))
    assert show["state"] == "pending", show
    time.sleep(0.5)
    assert not runs.exists()  # it never ran: not on CPU 1, which the node no longer offers
    requeued = [event for event in cluster.drover_json("events", str(second)) if event["kind"] == "requeued"]
    assert len(requeued) == 1 and "without CPU 1" in json.dumps(requeued[0]), requeued

    gate.touch()  # the first job ends; the second runs in its room, CPU 0
    wait_until(lambda: cluster.drover_json("show", str(second))["state"] == "completed",
               describe="the second job run once the first ended", timeout=30)
    assert len(runs.read_text().split()) == 1
    rows = cluster.drover_json("history", "--job", str(second))
    assert [(row["attempt"], row["exit_status"]) for row in rows] == [(1, None), (2, 0)], rows
    (rerun,) = shown_attempts(cluster, second)[1:]
    assert rerun["cpu_ids"] == [0]


def shown_attempts(cluster: LocalCluster, job: int) -> list[dict[str, Any]]:
    return cluster.drover_json("show", str(job))["tasks"][0]["attempts"]  # type: ignore[no-any-return]
