"""A controller that cannot become a job's owner (a shared cluster's, which runs as its service
user) has the job's event log written by the node on the host the job came from: chosen when the
job is submitted (a node on the Unix socket for a local submission; over TLS, the node whose
channel comes from the request's address), kept with the job, asked over the node channel.
A real store and service; the nodes are fake sockets that record what the controller sends."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.node_socket import FakeSocket

from drover.controller.nodes.node_channels import NodeChannel
from drover.controller.service import ControllerService, Settings
from drover.controller.upkeep import event_log
from drover.core.errors import Conflict
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import EventLogAppended, Hello
from drover.store.sqlite import SqliteStore

NOBODY = 65534  # the controller's user in these tests: it cannot become alice


class Cluster:
    """Node `here` on the local socket, node `there` over TLS from 10.0.0.2."""

    def __init__(self, path: Path) -> None:
        self.store = SqliteStore(str(path))
        self.service = ControllerService(self.store, Settings())
        self.here, self.there = FakeSocket(), FakeSocket()
        self.service.node_connected(NodeChannel("here", self.here, local=True), Hello("here", 4, 8192, []))
        self.service.node_connected(NodeChannel("there", self.there, host="10.0.0.2"), Hello("there", 4, 8192, []))

    async def turn(self) -> None:
        """Let the loop carry out what was queued: the writer's task, the channel's writes."""
        for _ in range(20):
            await asyncio.sleep(0)

    async def submit(self, submitted_from: str | None = None, **fields: Any) -> int:
        job = JobSubmission(script="true\n", workdir="/tmp", event_log="/tmp/alice/events.jsonl", hold=True,
                            **fields)
        (job_id,) = self.service.submit([job], "alice", submitted_from=submitted_from)
        await self.turn()
        return job_id

    async def answer(self, node: str, answer: EventLogAppended) -> None:
        self.service.node_messages(node, [answer])
        await self.turn()

    def event_kinds(self, job_id: int) -> list[str]:
        return [event.kind for _, event in self.store.events_of(job_id, 0, 1000)]


def run(tmp_path: Path, body: Callable[[Cluster], Awaitable[None]]) -> None:
    async def main() -> None:
        cluster = Cluster(tmp_path / "drover.db")
        try:
            await body(cluster)
        finally:
            await cluster.service.channels.close_all()
            await cluster.service.event_logs.close()

    asyncio.run(main())


@pytest.fixture
def unprivileged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_log.os, "geteuid", lambda: NOBODY)


def test_a_local_submission_has_its_event_log_written_by_a_node_of_this_host(tmp_path: Path, unprivileged: None) -> None:
    async def body(cluster: Cluster) -> None:
        job = await cluster.submit()
        assert cluster.store.load_job(job).event_log_node == "here"  # type: ignore[union-attr]
        (append,) = cluster.here.appends()
        assert not cluster.there.appends()
        assert (append.job, append.owner, append.path) == (job, "alice", "/tmp/alice/events.jsonl")
        assert [seq for seq, _ in append.lines] and '"event":"submitted"' in append.lines[0][1]
        await cluster.answer("here", EventLogAppended(append.request, last=append.lines[-1][0]))
        cluster.service.act("release", [str(job)], lambda owner, job_id, verb: None)
        await cluster.turn()
        later = cluster.here.appends()[-1]
        assert later is not append and all(seq > append.lines[-1][0] for seq, _ in later.lines)  # confirmed ones not resent
    run(tmp_path, body)


def test_a_submission_over_tls_goes_to_the_node_of_its_address_and_else_is_refused(
        tmp_path: Path, unprivileged: None) -> None:
    async def body(cluster: Cluster) -> None:
        job = await cluster.submit(submitted_from="10.0.0.2")
        assert cluster.store.load_job(job).event_log_node == "there"  # type: ignore[union-attr]
        assert [a.job for a in cluster.there.appends()] == [job] and not cluster.here.appends()
        before = set(cluster.service.state.jobs)
        with pytest.raises(Conflict, match="no node of the host at 10.0.0.9 is connected"):
            await cluster.submit(submitted_from="10.0.0.9")
        assert set(cluster.service.state.jobs) == before  # refused whole: nothing stored
        cluster.service.submit([JobSubmission(script="true\n", workdir="/tmp")], "alice", submitted_from="10.0.0.9")
    run(tmp_path, body)


def test_without_a_node_on_this_host_a_local_job_with_an_event_log_is_refused(tmp_path: Path, unprivileged: None) -> None:
    async def body(cluster: Cluster) -> None:
        here = cluster.service.channels.channel("here")
        assert here is not None
        cluster.service.node_disconnected(here)
        with pytest.raises(Conflict, match="cannot write as alice.*no node of this host is connected"):
            await cluster.submit()
    run(tmp_path, body)


def test_only_the_asked_node_answers_and_a_refusal_is_kept_with_the_job_once(tmp_path: Path, unprivileged: None) -> None:
    async def body(cluster: Cluster) -> None:
        job = await cluster.submit()
        (append,) = cluster.here.appends()
        await cluster.answer("there", EventLogAppended(append.request, error="not mine to answer"))
        assert "event_log_failed" not in cluster.event_kinds(job)
        await cluster.answer("here", EventLogAppended(append.request, error="the event log /tmp/alice/events.jsonl "
                                                                          "is not the one the job's owner signed"))
        cluster.service.act("release", [str(job)], lambda owner, job_id, verb: None)
        await cluster.turn()
        for late in cluster.here.appends()[1:]:
            await cluster.answer("here", EventLogAppended(late.request, error="refused again"))
        failed = [event for _, event in cluster.store.events_of(job, 0, 1000) if event.kind == "event_log_failed"]
        assert len(failed) == 1 and "is not the one the job's owner signed" in failed[0].detail["error"]
        assert failed[0].detail["path"] == "/tmp/alice/events.jsonl"
        assert failed[0].detail["error"].endswith("(written as alice on node here)")
    run(tmp_path, body)


def test_a_controller_that_can_become_the_owner_writes_the_event_log_itself(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(event_log.os, "geteuid", lambda: 0)
    monkeypatch.setattr(event_log._Writer, "put", lambda self, request: None)  # no writer process here

    async def body(cluster: Cluster) -> None:
        job = await cluster.submit(submitted_from="10.0.0.9")  # no node there, and none needed
        assert cluster.store.load_job(job).event_log_node is None  # type: ignore[union-attr]
        assert not cluster.here.appends() and not cluster.there.appends()
    run(tmp_path, body)


def test_what_cannot_reach_the_node_is_sent_again_whole_when_it_says_hello(tmp_path: Path, unprivileged: None) -> None:
    """As after a restart of the controller, whose catch-up runs before any node is back."""
    async def body(cluster: Cluster) -> None:
        job = await cluster.submit()
        (first,) = cluster.here.appends()
        here = cluster.service.channels.channel("here")
        assert here is not None
        cluster.service.node_disconnected(here)
        cluster.service.act("release", [str(job)], lambda owner, job_id, verb: None)
        await cluster.turn()
        assert cluster.here.appends() == [first]  # nothing sent into the void
        back = FakeSocket()
        cluster.service.node_connected(NodeChannel("here", back, local=True), Hello("here", 4, 8192, []))
        await cluster.turn()
        (again,) = back.appends()
        assert [seq for seq, _ in again.lines] == [seq for seq, _ in cluster.store.events_of(job, 0, 1000)]
    run(tmp_path, body)
