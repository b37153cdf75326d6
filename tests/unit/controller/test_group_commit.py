"""Group commit: the frames of reports the nodes send in one loop turn, and the planner's pass
they ask for, are committed in one transaction, and only then acknowledged and acted on; a
store that refuses the transaction gets nothing of it acknowledged, and a job whose changes the
store refuses is failed alone."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.node_socket import FakeSocket

from drover.config_schema import SchedulerSection
from drover.controller.effects import Outcome, SendToNode
from drover.controller.handlers import dispatch
from drover.controller.nodes.node_channels import NodeChannel
from drover.controller.service import ControllerService, Settings
from drover.controller.shell import report_group
from drover.core.arrays import TaskIndices
from drover.core.dependencies import Dependencies
from drover.core.errors import Unavailable
from drover.core.job import Attempt, Job, Task
from drover.core.job_spec import JobSpec
from drover.core.job_state import JobState
from drover.core.node import Node
from drover.core.node_state import NodeState
from drover.core.queues import QueueRecord
from drover.core.resources import Resources
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import (
    Ack,
    Exited,
    Exiting,
    Hello,
    Progress,
    SignalAttempt,
    StartAttempt,
    Started,
)
from drover.store.base import Changes, EventRecord, SubmissionKey
from drover.store.faults import StoreFault
from drover.store.sqlite import SqliteStore

OK = {"exit_code": 0, "signal": None, "failure": None, "timed_out": False, "terminated": False, "out_of_memory": False}


class CountingStore(SqliteStore):
    """A real store that logs each commit (what it held) and refuses the next ones as told."""

    def __init__(self, path: str, log: list[tuple[str, Any]]) -> None:
        super().__init__(path)
        self.log = log
        self.refuse: list[Exception] = []

    def commit(self, changes: Changes) -> None:
        if self.refuse:
            self.log.append(("refused", changes.job_ids()))
            raise self.refuse.pop(0)
        try:
            super().commit(changes)
        except Exception:
            self.log.append(("failed", changes.job_ids()))
            raise
        self.log.append(("commit", changes.job_ids()))


class Cluster:
    """A controller service on a real store with nodes of one CPU each, n1 and n2; `log` holds,
    in order, every commit and every message handed to a node's channel."""

    def __init__(self, path: Path) -> None:
        self.log: list[tuple[str, Any]] = []
        self.store = CountingStore(str(path), self.log)
        # These count the orders of one pass and the jobs left waiting: no promises behind them.
        self.service = ControllerService(self.store, Settings(scheduler=SchedulerSection(promises=False)))
        channels = self.service.channels
        queue = channels.send

        def send(node: str, message: Any) -> None:
            self.log.append(("send", message))
            queue(node, message)

        channels.send = send  # type: ignore[method-assign]
        self.sockets: dict[str, FakeSocket] = {}
        for node in ("n1", "n2"):
            self.sockets[node] = FakeSocket()
            self.service.node_connected(NodeChannel(node, self.sockets[node]), Hello(node, 1, 8192, []))

    async def turn(self) -> None:
        for _ in range(5):
            await asyncio.sleep(0)

    async def held(self) -> None:
        """Past the hold of frames that nothing waits on (a start reported alone), then a turn."""
        await asyncio.sleep(report_group.HOLD_S)
        await self.turn()

    async def submit(self, count: int) -> list[int]:
        ids = self.service.submit([JobSubmission(script="true\n", workdir="/tmp")] * count, "alice")
        await self.turn()
        return ids

    def orders(self) -> dict[int, tuple[str, str]]:
        """job id → (node, attempt) of every start order sent."""
        return {m.config["job_id"]: (node, m.attempt) for node, socket in self.sockets.items()
                for m in socket.messages if isinstance(m, StartAttempt)}

    def acked(self) -> list[str]:
        return sorted(name for socket in self.sockets.values() for m in socket.messages if isinstance(m, Ack)
                      for name in m.attempts)

    def commits(self) -> list[set[int]]:
        return [jobs for what, jobs in self.log if what == "commit"]

    def state_of(self, job_id: int) -> str:
        job = self.service.state.jobs.get(job_id) or self.store.load_job(job_id)
        assert job is not None
        if job.state is not None:
            return job.state.value
        return job.tasks[0].state.value if job.tasks else job.fresh_state.value

    def check(self) -> None:
        """The working set agrees with itself and with the store."""
        state = self.service.state
        state.check_invariants()
        for job_id, job in state.jobs.items():
            stored = self.store.load_job(job_id)
            assert stored is not None
            assert {i: (t.state, t.attempt) for i, t in stored.tasks.items()} == \
                   {i: (t.state, t.attempt) for i, t in job.tasks.items()}, job_id


def run(tmp_path: Path, body: Callable[[Cluster], Awaitable[None]]) -> None:
    async def main() -> None:
        await body(Cluster(tmp_path / "drover.db"))

    asyncio.run(main())


def disk_full() -> StoreFault:
    return StoreFault("the job store drover.db cannot be used: the disk is full (database or disk is full)")


async def running(cluster: Cluster, count: int) -> tuple[list[int], dict[int, tuple[str, str]]]:
    """`count` jobs submitted; the first two run, one on each node, the others wait."""
    ids = await cluster.submit(count)
    orders = cluster.orders()
    assert sorted(orders) == ids[:2]
    for job_id, (node, attempt) in orders.items():
        cluster.service.node_messages(node, [Started(attempt, 10 + job_id, 1.0)])
    await cluster.held()
    assert all(cluster.state_of(job_id) == "running" for job_id in ids[:2])
    return ids, orders


def test_a_frame_of_reports_and_the_pass_it_asks_for_are_one_transaction_committed_before_anything_is_sent(
        tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        (first, second, third), orders = await running(cluster, 3)
        node, attempt = orders[first]
        cluster.log.clear()
        cluster.service.node_messages(node, [Exited(attempt, dict(OK))])
        assert not cluster.log  # handled at the end of the loop turn
        await cluster.turn()
        # One transaction: the end of the first job, and the start of the third on its CPU.
        assert [what for what, _ in cluster.log] == ["commit", "send", "send"]
        assert cluster.commits() == [{first, third}]
        assert [type(message) for _, message in cluster.log[1:]] == [Ack, StartAttempt]
        assert cluster.state_of(first) == "completed" and cluster.state_of(third) == "dispatched"
        assert cluster.orders()[third][0] == node and cluster.state_of(second) == "running"
        cluster.check()

    run(tmp_path, body)


def test_every_nodes_frames_of_one_loop_turn_and_their_pass_are_one_transaction(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        (first, second, third, fourth), orders = await running(cluster, 4)
        cluster.log.clear()
        for job_id in (first, second):
            node, attempt = orders[job_id]
            cluster.service.node_messages(node, [Exited(attempt, dict(OK))])
        await cluster.turn()
        assert cluster.commits() == [{first, second, third, fourth}]
        assert [what for what, _ in cluster.log].index("send") == 1  # nothing sent before the commit
        assert cluster.acked() == sorted(attempt for _, attempt in orders.values())
        assert {cluster.state_of(job_id) for job_id in (third, fourth)} == {"dispatched"}
        cluster.check()

    run(tmp_path, body)


def test_a_request_after_a_frame_in_the_same_turn_comes_after_its_commit(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        (first, _), orders = await running(cluster, 2)
        node, attempt = orders[first]
        cluster.log.clear()
        cluster.service.node_messages(node, [Exited(attempt, dict(OK))])
        (result,) = cluster.service.act("cancel", [str(first)], lambda owner, job_id, verb: None)
        assert not result.ok  # the job had ended: its report was handled first
        assert cluster.commits() == [{first}] and cluster.state_of(first) == "completed"
        await cluster.turn()
        cluster.check()

    run(tmp_path, body)


def test_a_store_fault_in_the_grouped_commit_acknowledges_nothing_sends_nothing_and_loses_nothing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def body(cluster: Cluster) -> None:
        (first, second, third, fourth), orders = await running(cluster, 4)
        (n_first, a_first), (n_second, a_second) = orders[first], orders[second]
        cluster.log.clear()
        cluster.store.refuse = [disk_full()]
        before = {node: len(socket.messages) for node, socket in cluster.sockets.items()}
        usage = cluster.service.state.usage.saved()
        cluster.service.node_messages(n_first, [Exited(a_first, dict(OK))])
        cluster.service.node_messages(n_second, [Exited(a_second, dict(OK))])
        await cluster.turn()
        assert [what for what, _ in cluster.log] == ["refused"]  # one transaction, refused: nothing sent
        assert {node: len(socket.messages) for node, socket in cluster.sockets.items()} == before
        assert cluster.service.state.usage.saved() == usage  # the ends are counted for fair share when committed
        assert [cluster.state_of(job_id) for job_id in (first, second, third, fourth)] == \
               ["running", "running", "pending", "pending"]  # as the store has them
        cluster.check()
        assert cluster.service.channels.channel(n_first) is not None
        # The nodes send their exit reports again, once the store takes changes.
        cluster.service.node_messages(n_first, [Exited(a_first, dict(OK))])
        cluster.service.node_messages(n_second, [Exited(a_second, dict(OK))])
        await cluster.turn()
        assert cluster.commits() == [{first, second, third, fourth}]
        assert cluster.acked() == sorted([a_first, a_second])
        assert {cluster.state_of(job_id) for job_id in (third, fourth)} == {"dispatched"}
        cluster.check()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body)
    assert "the disk is full" in caplog.text and "reloading the working set" not in caplog.text


def test_what_a_node_says_once_is_kept_when_the_store_refuses_the_group(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        ids = await cluster.submit(2)
        orders = cluster.orders()
        cluster.store.refuse = [disk_full()]
        for job_id in ids:
            node, attempt = orders[job_id]
            cluster.service.node_messages(node, [Started(attempt, 10, 1.0)])
        await cluster.held()
        assert {cluster.state_of(job_id) for job_id in ids} == {"dispatched"}
        assert {node: [r.attempt for r in reports] for node, reports in cluster.service.reports.unsaved.items()} == \
               {node: [attempt] for node, attempt in orders.values()}
        await asyncio.sleep(0.6)  # tried again on a timer, one group again
        assert {cluster.state_of(job_id) for job_id in ids} == {"running"}
        assert not cluster.service.reports.unsaved and not cluster.service.reports.unsaved_retry
        cluster.check()

    run(tmp_path, body)


def test_a_job_whose_changes_the_store_refuses_is_failed_alone_and_the_rest_of_the_group_commits(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def body(cluster: Cluster) -> None:
        (good, bad, third, fourth), orders = await running(cluster, 4)
        (n_good, a_good), (n_bad, a_bad) = orders[good], orders[bad]
        cluster.log.clear()
        cluster.service.node_messages(n_good, [Exited(a_good, dict(OK))])
        cluster.service.node_messages(n_bad, [Exited(a_bad, dict(OK, exit_code=2**63))])  # too large to store
        await cluster.turn()
        assert cluster.state_of(good) == "completed" and cluster.state_of(bad) == "failed"
        bad_job = cluster.store.load_job(bad)
        assert bad_job is not None and "recording its changes: OverflowError" in (bad_job.end_reason or "")
        assert cluster.acked() == sorted([a_good, a_bad])  # the bad one with its failure
        # The pass had started the waiting jobs on the CPUs both reports freed: nothing of the
        # group is committed. Its reports are handled again and committed without the pass, job
        # by job; the bad job is failed in a transaction of its own, and then the pass runs.
        commits = [(what, jobs) for what, jobs in cluster.log if what != "send"]
        assert commits == [("failed", {good, bad, third, fourth}), ("failed", {good, bad}), ("commit", {good}),
                           ("failed", {bad}), ("commit", {bad}), ("commit", {third, fourth})]
        sent = [message for what, message in cluster.log if what == "send"]
        assert [type(message) for message in sent] == [Ack, SignalAttempt, Ack, StartAttempt, StartAttempt]
        assert {cluster.state_of(job_id) for job_id in (third, fourth)} == {"dispatched"}
        cluster.check()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body)
    assert "reloading the working set" not in caplog.text
    assert "the reports are handled again, committed without the pass" in caplog.text


def test_a_job_set_aside_by_one_nodes_frame_is_failed_before_the_next_frames_and_the_pass(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def body(cluster: Cluster) -> None:
        (bad, good, third, fourth), orders = await running(cluster, 4)
        (n_bad, a_bad), (n_good, a_good) = orders[bad], orders[good]
        cluster.log.clear()
        cluster.service.node_messages(n_bad, [Exited(a_bad, {"exit_code": 0})])  # type: ignore[typeddict-item]
        cluster.service.node_messages(n_good, [Exited(a_good, dict(OK))])
        await cluster.turn()
        assert cluster.state_of(bad) == "failed" and cluster.state_of(good) == "completed"
        # The bad job's failure (its frame changed nothing else), then the next frame and the pass.
        assert cluster.commits() == [{bad}, {good, third, fourth}]
        assert cluster.acked() == sorted([a_bad, a_good])
        assert {cluster.state_of(job_id) for job_id in (third, fourth)} == {"dispatched"}
        cluster.check()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body)
    assert "reloading the working set" not in caplog.text


def test_a_frame_whose_handling_raises_is_put_back_and_the_other_frames_and_the_pass_commit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    real, armed = report_group.on_reports, []

    def on_reports(state: Any, node: str, reports: Any, *args: Any) -> Outcome:
        outcome = real(state, node, reports, *args)
        if node == "n2" and armed:
            raise RuntimeError("not a job's fault")
        return outcome

    monkeypatch.setattr(report_group, "on_reports", on_reports)

    async def body(cluster: Cluster) -> None:
        (first, second, third, _), orders = await running(cluster, 4)
        (n_first, a_first), (n_second, a_second) = orders[first], orders[second]
        assert (n_first, n_second) == ("n1", "n2")
        armed.append(True)
        cluster.log.clear()
        cluster.service.node_messages(n_first, [Exited(a_first, dict(OK))])
        cluster.service.node_messages(n_second, [Exited(a_second, dict(OK))])
        await cluster.turn()
        assert cluster.commits() == [{first, third}]
        assert cluster.acked() == [a_first]  # the other comes again
        assert cluster.state_of(second) == "running" and cluster.state_of(third) == "dispatched"
        cluster.check()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body)
    assert "handling a frame of reports of node n2 failed" in caplog.text
    assert "reloading the working set" not in caplog.text


def test_a_job_the_pass_sets_aside_after_its_reports_of_the_same_turn_puts_the_group_back_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The pass gives the CPU an array's report freed to its next task, and raises starting it:
    restored alone as the store has it, the array would not have had its report. The group is
    put back whole, its report committed on its own, then the pass runs again."""
    real_order, poisoned = dispatch.start_order, set[int]()

    def start_order(job: Any, *args: Any, **options: Any) -> Any:
        if job.id in poisoned:
            raise ZeroDivisionError("a bug in starting it")
        return real_order(job, *args, **options)

    monkeypatch.setattr(dispatch, "start_order", start_order)

    async def body(cluster: Cluster) -> None:
        service = cluster.service
        (array,) = service.submit([JobSubmission(script="true\n", workdir="/tmp", array="0-2")], "alice")
        await cluster.turn()
        (other,) = await cluster.submit(1)
        starts = [(node, m.attempt) for node, socket in cluster.sockets.items() for m in socket.messages
                  if isinstance(m, StartAttempt)]
        assert sorted(node for node, _ in starts) == ["n1", "n2"]  # two of the array's tasks
        for node, attempt in starts:
            service.node_messages(node, [Started(attempt, 10, 1.0)])
        await cluster.turn()
        poisoned.add(array)
        cluster.log.clear()
        node, attempt = starts[0]
        service.node_messages(node, [Exited(attempt, dict(OK))])
        await cluster.turn()
        assert cluster.commits() == [{array}, {array}, {other}]  # the report, the array's failure, the pass
        assert cluster.state_of(other) == "dispatched" and cluster.state_of(array) == "failed"
        assert [name for m in cluster.sockets[node].messages if isinstance(m, Ack) for name in m.attempts] == [attempt]
        stored = cluster.store.load_job(array)
        assert stored is not None and "while starting task" in (stored.end_reason or "")
        assert stored.tasks[int(attempt.split(".")[1])].state is JobState.COMPLETED  # its report counted
        cluster.check()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body)
    assert "the reports are handled again, committed without the pass" in caplog.text
    assert "reloading the working set" not in caplog.text


# -- frames held for company -----------------------------------------------------------------------


def test_what_nothing_waits_on_may_be_held_and_what_is_waited_for_may_not() -> None:
    assert report_group.may_wait(Started("1.0.1", 10, 1.0))
    assert report_group.may_wait(Exiting("1.0.1", dict(OK)))  # type: ignore[arg-type]
    assert report_group.may_wait(Progress("1.0.1", ["exit_hook"]))
    assert report_group.may_wait(Progress("1.0.1", ["exit_hook"], "mail", 3, "no server"))  # a failed try
    assert not report_group.may_wait(Progress("1.0.1", [], "mail", 5, "no server", given_up=True))  # acknowledged
    assert not report_group.may_wait(Exited("1.0.1", dict(OK)))  # acknowledged, and frees the CPUs
    assert not report_group.may_wait(Started("1.0.1", 10, 1.0, pty_socket="/run/pty.sock"))  # a user waits
    assert not report_group.may_wait(Started("1.0.1", 10, 1.0, moved=True))  # a promise started in place


def test_a_start_reported_alone_is_committed_with_the_next_frame_that_needs_a_commit(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        first, second, third = await cluster.submit(3)
        orders = cluster.orders()
        (n_first, a_first), (n_second, a_second) = orders[first], orders[second]
        cluster.log.clear()
        cluster.service.node_messages(n_first, [Started(a_first, 10, 1.0)])
        cluster.service.node_messages(n_second, [Started(a_second, 11, 1.0)])
        await cluster.turn()
        assert not cluster.log  # held: nothing waits on them
        assert cluster.state_of(first) == cluster.state_of(second) == "dispatched"
        cluster.service.node_messages(n_first, [Exiting(a_first, dict(OK))])  # type: ignore[arg-type]
        await cluster.turn()
        assert not cluster.log
        cluster.service.node_messages(n_first, [Exited(a_first, dict(OK))])
        await cluster.turn()
        # One transaction: both starts, the first job's exit and end, and the third job's start.
        assert cluster.commits() == [{first, second, third}]
        assert [type(message) for what, message in cluster.log if what == "send"] == [Ack, StartAttempt]
        assert cluster.state_of(first) == "completed" and cluster.state_of(second) == "running"
        assert cluster.state_of(third) == "dispatched"
        kinds = [event.kind for _, event in cluster.store.events_of(first, 0, 100)]
        assert kinds[kinds.index("started"):] == ["started", "exited", "completed", "job_ended"]
        await cluster.held()
        assert len(cluster.commits()) == 1  # nothing left held
        cluster.check()

    run(tmp_path, body)


async def first_start_held(cluster: Cluster) -> tuple[int, int]:
    """Two jobs submitted and ordered; the first's Started report comes alone, and nothing waits
    on it: held for company (report_group.may_wait), no commit yet. The two jobs."""
    first, second = await cluster.submit(2)
    node, attempt = cluster.orders()[first]
    cluster.log.clear()
    cluster.service.node_messages(node, [Started(attempt, 10, 1.0)])
    return first, second


def test_a_frame_held_alone_is_committed_once_the_hold_is_over(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        first, _ = await first_start_held(cluster)
        await cluster.turn()
        assert not cluster.log
        await asyncio.sleep(report_group.HOLD_S)
        await cluster.turn()
        assert cluster.commits() == [{first}] and cluster.state_of(first) == "running"
        cluster.check()

    run(tmp_path, body)


def test_a_frame_held_for_company_is_recorded_at_the_time_it_came(tmp_path: Path) -> None:
    """A start held, then committed with the exit that came 20 ms after it: each is recorded at
    its own frame's time, not at the time the group handled them both."""
    async def body(cluster: Cluster) -> None:
        first, _ = await cluster.submit(2)
        node, attempt = cluster.orders()[first]
        now = [5000.0]
        cluster.service.shell.clock = lambda: now[0]
        cluster.service.node_messages(node, [Started(attempt, 10, 1.0)])
        now[0] = 5000.02
        cluster.service.node_messages(node, [Exiting(attempt, dict(OK))])  # type: ignore[arg-type]
        now[0] = 5000.024
        cluster.service.node_messages(node, [Exited(attempt, dict(OK))])
        now[0] = 5000.03  # the group's handling
        await cluster.turn()
        times = {event.kind: event.time for _, event in cluster.store.events_of(first, 0, 100)}
        assert (times["started"], times["exited"], times["completed"]) == (5000.0, 5000.02, 5000.024), times

    run(tmp_path, body)


def test_a_request_handles_the_frames_held_before_it(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        first, second = await first_start_held(cluster)
        cluster.service.act("cancel", [str(second)], lambda owner, job_id, verb: None)
        assert cluster.commits() == [{first}, {second}]  # the start first, as it came
        assert cluster.state_of(first) == "running"
        await cluster.held()
        assert len(cluster.commits()) == 2
        cluster.check()

    run(tmp_path, body)


def test_a_controller_that_stops_records_the_frames_it_held(tmp_path: Path) -> None:
    async def body(cluster: Cluster) -> None:
        first, _ = await first_start_held(cluster)
        cluster.service.stop_answering(Unavailable("the controller is shutting down"))
        await cluster.turn()
        assert cluster.commits() == [{first}] and cluster.state_of(first) == "running"
        cluster.check()

    run(tmp_path, body)


# -- merging outcomes ---------------------------------------------------------------------------


def job(job_id: int) -> Job:
    return Job(job_id, "a", "j", 0.0, 0, Resources(1, 100), TaskIndices(), False, None, Dependencies(), JobSpec())


def test_merged_changes_are_those_of_one_handler_that_did_both() -> None:
    first, later = Changes(), Changes()
    old, new = Task(1, 0, JobState.RUNNING, 1.0), Task(1, 0, JobState.COMPLETED, 2.0)
    first.task(old)
    first.task(Task(2, 0, JobState.RUNNING, 1.0))
    later.task(new)
    first.job(job(1))
    later.job(job(2), spec=True)
    first.new_jobs.append(job(3))
    later.new_jobs.append(job(4))
    first.payloads[3] = {"script": "three\n", "environment": {}, "stage_in": []}
    later.payloads[4] = {"script": "four\n", "environment": {}, "stage_in": []}
    first.attempt(Attempt(1, 0, 1, "n1", (0,), 0.0))
    later.attempt(Attempt(1, 0, 1, "n2", (1,), 0.0))
    first.node(Node("n1", 1, 1, NodeState.UP, 0.0))
    later.node(Node("n1", 1, 1, NodeState.DRAINING, 0.0))
    first.queue("night", QueueRecord("night", starting=False))
    later.queue("night", None)
    first.event(1.0, "a", 1)
    later.event(2.0, "b")
    later.event(3.0, "c", 2)
    first.given_up_step(1, 0, 1, {"step": "mail", "tries": 5, "error": "down"})
    later.given_up_step(1, 0, 1, {"step": "epilog", "tries": 1, "error": "exit 1"})
    later.given_up_step(2, 0, 1, {"step": "mail", "tries": 5, "error": "down"})
    steps = first.given_up[1, 0, 1]
    first.merge(later)
    assert first.tasks == {(1, 0): new, (2, 0): Task(2, 0, JobState.RUNNING, 1.0)}  # the later value wins
    assert set(first.jobs) == {1, 2} and first.specs == {2} and [j.id for j in first.new_jobs] == [3, 4]
    assert {job_id: p["script"] for job_id, p in first.payloads.items()} == {3: "three\n", 4: "four\n"}
    assert first.attempts[1, 0, 1].node == "n2" and first.nodes["n1"].state is NodeState.DRAINING
    assert first.queues == {"night": None}  # removed, after its change
    assert [e.kind for e in first.events] == ["a", "b", "c"]  # in order
    assert [s["step"] for s in first.given_up[1, 0, 1]] == ["mail", "epilog"] and len(first.given_up[2, 0, 1]) == 1
    assert len(steps) == 1  # the earlier handler's list is not changed under it
    assert first.job_ids() == {1, 2, 3, 4}


def test_merging_covers_every_field_of_changes() -> None:
    """A field added to Changes must be merged too (test_job_isolation names the fields)."""
    later = Changes()
    later.new_jobs.append(job(1))
    later.job(job(1), spec=True)
    later.task(Task(1, 0, JobState.PENDING, 0.0))
    later.attempt(Attempt(1, 0, 1, "n1", (0,), 0.0))
    later.given_up_step(1, 0, 1, {"step": "mail", "tries": 5, "error": "down"})
    later.node(Node("n1", 1, 1, NodeState.UP, 0.0))
    later.queue("night", QueueRecord("night", starting=False))
    later.events.append(EventRecord(0.0, "node_connected"))
    later.submissions.append(SubmissionKey("a", "key-1", (1,), 0.0))
    merged = Changes()
    merged.merge(later)
    for name in Changes.__dataclass_fields__:
        assert getattr(merged, name) == getattr(later, name), name


def test_a_job_a_later_outcome_sets_aside_leaves_nothing_of_the_earlier_one_and_takes_its_acks() -> None:
    earlier = Outcome()
    earlier.changes.task(Task(1, 0, JobState.COMPLETED, 1.0))
    earlier.changes.task(Task(2, 0, JobState.COMPLETED, 1.0))
    earlier.send("n1", Ack(["1.0.1", "2.0.1"]))
    earlier.send("n1", SignalAttempt("1.1.1", "terminate"))
    later = Outcome(reschedule=True)
    later.changes.task(Task(1, 1, JobState.FAILED, 2.0))
    later.changes.event(2.0, "x", 1)
    later.fault(1, ValueError("half way"), "handling it", (SendToNode("n2", Ack(["1.1.1"])),))
    later.send("n2", Ack(["3.0.1"]))
    assert earlier.merge(later) == {1}
    assert set(earlier.changes.tasks) == {(2, 0)} and not earlier.changes.events
    assert earlier.effects == [SendToNode("n1", Ack(["2.0.1"])), SendToNode("n2", Ack(["3.0.1"]))]
    (fault,) = earlier.faults
    assert fault.acks == (SendToNode("n2", Ack(["1.1.1"])), SendToNode("n1", Ack(["1.0.1"])))
    assert earlier.reschedule and earlier.aside == {1}
