"""An exception while handling one job costs that job alone: it is put back as the store has it
and failed, with the reason; the other jobs go on, nothing is reloaded, and no node's channel is
closed. A store that refuses a node's reports closes no channel either: nothing is acknowledged,
the touched jobs are put back, and the reports are taken once the store takes changes again."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from tests.helpers.node_socket import FakeSocket

from drover.controller.effects import JobEnded, Outcome, SendMail, SendToNode
from drover.controller.faults import REPORT_RAISES, Faults
from drover.controller.handlers import dispatch, node_reports
from drover.controller.handlers.node_reports import handle_report, on_reports
from drover.controller.nodes.node_channels import NodeChannel
from drover.controller.service import ControllerService, Settings
from drover.controller.shell import report_group
from drover.controller.shell import transaction as shell_module
from drover.controller.state import ControllerState
from drover.core.arrays import TaskIndices
from drover.core.dependencies import Dependencies
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


class FlakyStore(SqliteStore):
    """A real store whose next commits fail as told: each entry of `refuse` is raised by one
    commit, in order (a StoreFault as a full disk's, anything else as data the store refuses)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.refuse: list[Exception] = []

    def commit(self, changes: Changes) -> None:
        if self.refuse:
            raise self.refuse.pop(0)
        super().commit(changes)


def disk_full() -> StoreFault:
    return StoreFault("the job store drover.db cannot be used: the disk is full (database or disk is full)")


class Cluster:
    """A controller service on a real store with one node, n1, connected over a fake socket."""

    def __init__(self, path: Path, faults: Faults | None = None, settings: Settings | None = None) -> None:
        self.store = FlakyStore(str(path))
        self.service = ControllerService(self.store, settings or Settings(), faults=faults or Faults())
        self.socket = FakeSocket()
        self.service.node_connected(NodeChannel("n1", self.socket), Hello("n1", 4, 8192, []))

    async def turn(self) -> None:
        """Let the loop carry out what was queued (a planner pass, the channel's writes)."""
        for _ in range(5):
            await asyncio.sleep(0)

    async def submit(self, count: int = 1, **fields: Any) -> list[int]:
        ids = self.service.submit([JobSubmission(script="true\n", workdir="/tmp", **fields)] * count, "alice")
        await self.turn()
        return ids

    async def release(self, *jobs: int) -> None:
        self.service.act("release", [str(job) for job in jobs], lambda owner, job_id, verb: None)
        await self.turn()

    async def report(self, *reports: Any) -> None:
        """The node's frame, handled: past the hold of one that nothing waits on (a start)."""
        self.service.node_messages("n1", list(reports))
        if all(report_group.may_wait(report) for report in reports):
            await asyncio.sleep(report_group.HOLD_S)
        await self.turn()

    def sent(self, kind: type) -> list[Any]:
        return [m for m in self.socket.messages if isinstance(m, kind)]

    def acked(self) -> list[str]:
        return [name for ack in self.sent(Ack) for name in ack.attempts]

    def state_of(self, job_id: int) -> str:
        job = self.service.state.jobs.get(job_id) or self.store.load_job(job_id)
        assert job is not None
        return job.state.value if job.state else job.tasks[0].state.value

    def stored(self, job_id: int) -> Job:
        job = self.store.load_job(job_id)
        assert job is not None
        return job

    def event_kinds(self, job_id: int) -> list[str]:
        return [event.kind for _, event in self.store.events_of(job_id, 0, 1000)]

    def check(self) -> None:
        """The working set agrees with itself and with the store, and the node still has its channel."""
        state = self.service.state
        state.check_invariants()
        assert self.service.channels.channel("n1") is not None and not self.socket.closed
        for job_id, job in state.jobs.items():
            stored = self.stored(job_id)
            assert {i: (t.state, t.attempt) for i, t in stored.tasks.items()} == \
                   {i: (t.state, t.attempt) for i, t in job.tasks.items()}, job_id


def run(tmp_path: Path, body: Callable[[Cluster], Awaitable[None]], faults: Faults | None = None) -> None:
    async def main() -> None:
        await body(Cluster(tmp_path / "drover.db", faults))

    asyncio.run(main())


def no_reload(caplog: pytest.LogCaptureFixture) -> None:
    assert "reloading the working set" not in caplog.text


# -- a node's reports --------------------------------------------------------------------------


def test_a_report_that_cannot_be_handled_fails_its_job_alone_and_is_acknowledged(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def body(cluster: Cluster) -> None:
        good, bad = await cluster.submit(2)
        first, second = (order.attempt for order in cluster.sent(StartAttempt))
        await cluster.report(Started(first, 10, 1.0), Started(second, 11, 1.0))
        # An exit record without its fields: the handler raises a KeyError half way through.
        await cluster.report(Exited(first, dict(OK)), Exited(second, {"exit_code": 0}))  # type: ignore[typeddict-item]
        assert cluster.state_of(good) == "completed"
        assert cluster.state_of(bad) == "failed"
        job = cluster.stored(bad)
        assert job.end_reason is not None
        assert job.end_reason.startswith(f"internal error while handling the exited report of attempt {second} "
                                         "from node n1: KeyError")
        assert "internal_error" in cluster.event_kinds(bad)
        assert sorted(cluster.acked()) == sorted([first, second])  # the node stops sending it
        assert cluster.service.state.nodes["n1"].running == 0
        cluster.check()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body)
    no_reload(caplog)
    assert "Traceback" in caplog.text and "the job fails, the other jobs go on" in caplog.text


def test_a_job_failed_while_it_runs_is_stopped_on_its_node_and_its_later_reports_change_nothing(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    faults = Faults(report_raises=("started", "poisoned"))

    async def body(cluster: Cluster) -> None:
        (other,) = await cluster.submit(name="other")
        (bad,) = await cluster.submit(name="poisoned")
        attempts = {order.config["job_id"]: order.attempt for order in cluster.sent(StartAttempt)}
        await cluster.report(Started(attempts[bad], 10, 1.0), Started(attempts[other], 11, 1.0))
        assert cluster.state_of(other) == "running" and cluster.state_of(bad) == "failed"
        (stop,) = cluster.sent(SignalAttempt)
        assert (stop.attempt, stop.action, stop.why) == (attempts[bad], "terminate", "stray")
        assert "injected fault" in (cluster.stored(bad).end_reason or "")
        # The stopped attempt's end comes later: acknowledged, and nothing else changes.
        await cluster.report(Exited(attempts[bad], dict(OK, terminated=True)), Exited(attempts[other], dict(OK)))
        assert sorted(cluster.acked()) == sorted(attempts.values())
        assert cluster.state_of(bad) == "failed" and cluster.state_of(other) == "completed"
        assert cluster.event_kinds(bad).count("job_ended") == 1
        cluster.check()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body, faults)
    no_reload(caplog)


def test_a_poisoned_job_puts_back_what_it_did_to_its_node() -> None:
    """Pure: a handler that raised after putting the node in ERROR leaves the node as it was."""
    job = Job(1, "alice", "j", 0.0, 0, Resources(1, 100), TaskIndices(), False, None, Dependencies(), JobSpec())
    job.tasks[0] = Task(1, 0, JobState.COMPLETING, 0.0, attempt=1)
    node = Node("n1", 4, 8192, NodeState.UP, 0.0)
    state = ControllerState({1: job}, {(1, 0, 1): Attempt(1, 0, 1, "n1", (0,), 0.0)}, {"n1": node}, 2)

    def failing(state: ControllerState, outcome: Outcome, report: Any, now: float, semantics: Any) -> None:
        node.state, node.reason = NodeState.ERROR, "its prolog failed"
        outcome.changes.node(node)
        outcome.changes.event(now, "node_error", 1, 0, 1, node="n1")
        raise ValueError("half way")

    outcome = on_reports(state, "n1", [Exited("1.0.1", dict(OK)), Started("nonsense", 1, 0.0)],  # type: ignore[arg-type]
                         5.0, handle=failing)
    outcome.set_aside()  # as the shell does before it commits
    (fault,) = outcome.faults
    assert (fault.job_id, type(fault.error), fault.acks) == (1, ValueError, (SendToNode("n1", Ack(["1.0.1"])),))
    assert node.state is NodeState.UP and node.reason is None
    assert not outcome.changes.events and not outcome.effects  # nothing of job 1 is committed or sent


def test_a_report_whose_data_the_store_refuses_fails_its_job_alone(tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """An exit code too large for the store's integers: the frame's commit fails, is tried job
    by job, and only the job whose changes the store refuses is failed."""

    async def body(cluster: Cluster) -> None:
        good, bad = await cluster.submit(2)
        first, second = (order.attempt for order in cluster.sent(StartAttempt))
        await cluster.report(Exited(first, dict(OK)), Exited(second, dict(OK, exit_code=2**63)))
        assert cluster.state_of(good) == "completed" and cluster.state_of(bad) == "failed"
        assert "recording its changes: OverflowError" in (cluster.stored(bad).end_reason or "")
        assert sorted(cluster.acked()) == sorted([first, second])
        cluster.check()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body)
    no_reload(caplog)


# -- the store refuses -------------------------------------------------------------------------


def test_a_store_fault_during_reports_acknowledges_nothing_closes_no_channel_and_keeps_what_the_node_says_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def body(cluster: Cluster) -> None:
        first_job, second_job = await cluster.submit(2)
        first, second = (order.attempt for order in cluster.sent(StartAttempt))
        await cluster.report(Started(second, 11, 1.0))
        cluster.store.refuse = [disk_full()]
        await cluster.report(Started(first, 10, 1.0), Exited(second, dict(OK)))
        assert not cluster.acked()  # the node sends its exit report again
        assert cluster.state_of(first_job) == "dispatched" and cluster.state_of(second_job) == "running"
        cluster.check()  # put back as the store has them; the channel is open
        assert [r.attempt for r in cluster.service.reports.unsaved["n1"]] == [first]  # what the node says once
        # The store takes changes again: the node's next frame (its exit report, again) comes
        # after what was kept.
        await cluster.report(Exited(second, dict(OK)))
        assert cluster.state_of(first_job) == "running" and cluster.state_of(second_job) == "completed"
        assert cluster.acked() == [second] and not cluster.service.reports.unsaved
        cluster.check()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body)
    no_reload(caplog)
    assert "the disk is full" in caplog.text


def test_what_the_store_refused_is_tried_again_on_a_timer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(cluster: Cluster) -> None:
        (job,) = await cluster.submit()
        (order,) = cluster.sent(StartAttempt)
        cluster.store.refuse = [disk_full(), disk_full()]
        await cluster.report(Started(order.attempt, 10, 1.0))
        assert cluster.service.reports.unsaved_retry["n1"][1] == 0.5
        await asyncio.sleep(0.6)  # the first retry: refused again, the next one later
        assert cluster.service.reports.unsaved_retry["n1"][1] == 1.0 and cluster.state_of(job) == "dispatched"
        await asyncio.sleep(1.1)
        assert cluster.state_of(job) == "running" and not cluster.service.reports.unsaved
        assert "n1" not in cluster.service.reports.unsaved_retry
        cluster.check()

    run(tmp_path, body)


def test_a_job_the_store_refuses_to_fail_stays_as_stored_and_fails_when_its_report_comes_again(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def body(cluster: Cluster) -> None:
        (job,) = await cluster.submit()
        (order,) = cluster.sent(StartAttempt)
        await cluster.report(Started(order.attempt, 10, 1.0))
        cluster.store.refuse = [disk_full()]  # the commit that fails the job
        await cluster.report(Exited(order.attempt, {"exit_code": 0}))  # type: ignore[typeddict-item]
        assert cluster.state_of(job) == "running" and not cluster.acked()
        cluster.check()
        await cluster.report(Exited(order.attempt, {"exit_code": 0}))  # type: ignore[typeddict-item]
        assert cluster.state_of(job) == "failed" and cluster.acked() == [order.attempt]
        cluster.check()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body)
    no_reload(caplog)
    assert "could not be failed (the store refuses)" in caplog.text


def test_a_job_that_cannot_be_failed_either_is_left_as_stored_and_its_report_acknowledged(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any) -> None:
        raise RuntimeError("failing it fails too")

    monkeypatch.setattr(shell_module, "fail_job", broken)

    async def body(cluster: Cluster) -> None:
        (job,) = await cluster.submit()
        (order,) = cluster.sent(StartAttempt)
        await cluster.report(Exited(order.attempt, {"exit_code": 0}))  # type: ignore[typeddict-item]
        assert cluster.state_of(job) == "dispatched"  # as the store has it
        assert cluster.acked() == [order.attempt]  # so the report does not come back for ever
        cluster.check()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body)
    no_reload(caplog)
    assert "could not be failed either" in caplog.text


# -- the planner's starts and the lost-node check ---------------------------------------------


def test_a_start_that_cannot_be_ordered_fails_its_job_and_the_others_start(tmp_path: Path,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    async def body(cluster: Cluster) -> None:
        bad, good = await cluster.submit(2, hold=True)
        _spoil_output(cluster.service.state.jobs[bad])  # what the order is built from
        await cluster.release(bad, good)
        assert [order.config["job_id"] for order in cluster.sent(StartAttempt)] == [good]
        assert cluster.state_of(bad) == "failed" and cluster.state_of(good) == "dispatched"
        assert (cluster.stored(bad).end_reason or "").startswith(
            f"internal error while starting task {bad}.0 on node n1: TypeError")
        cluster.check()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body)
    no_reload(caplog)


def test_a_job_the_planner_raises_on_stays_pending_with_its_reason_and_the_others_are_planned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A planning error is the controller's fault, not the job's: the job is neither failed nor
    changed, it says why it waits, the log has the traceback, and it starts once the planner can
    plan it."""
    real_plan = dispatch.plan
    poisoned: set[int] = set()

    def plan(work: Any, nodes: Any, now: float, *policy: Any, **options: Any) -> Any:
        if any(item.job in poisoned for item in work):
            raise ZeroDivisionError("a planner bug")
        return real_plan(work, nodes, now, *policy, **options)

    monkeypatch.setattr(dispatch, "plan", plan)

    async def body(cluster: Cluster) -> None:
        bad, good = await cluster.submit(2, hold=True)
        poisoned.add(bad)
        await cluster.release(bad, good)
        assert [order.config["job_id"] for order in cluster.sent(StartAttempt)] == [good]
        held = cluster.service.state.jobs[bad]
        assert not held.tasks and held.fresh_state is JobState.PENDING and cluster.stored(bad).end_reason is None
        assert "internal_error" not in cluster.event_kinds(bad)
        waiting = cluster.service.state.pending_reasons[bad]
        assert waiting.value == "planning_error" and "ZeroDivisionError: a planner bug" in waiting.explanation
        cluster.check()
        poisoned.clear()
        await cluster.submit(1)  # a change: the planner runs again
        assert bad in [order.config["job_id"] for order in cluster.sent(StartAttempt)]
        cluster.check()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body)
    no_reload(caplog)
    assert "planning job 1 failed; it stays pending" in caplog.text and "Traceback" in caplog.text


def test_a_job_that_fails_the_lost_node_check_is_failed_and_the_others_are_lost_as_usual(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    real_release = node_reports.release_attempt
    poisoned: set[int] = set()

    def release(state: Any, job: Job, task: Task) -> None:
        if job.id in poisoned:
            raise LookupError("no such thing")
        real_release(state, job, task)

    monkeypatch.setattr(node_reports, "release_attempt", release)

    async def body(cluster: Cluster) -> None:
        bad, good = await cluster.submit(2)
        poisoned.add(bad)
        node = cluster.service.state.nodes["n1"]
        node.state, node.last_seen = NodeState.DOWN, 0.0
        cluster.service.shell.run(lambda: node_reports.on_nodes_lost(cluster.service.state, 1000.0, 10.0),
                                  shell_module.Scope(per_job=True))
        await cluster.turn()
        assert cluster.state_of(good) == "pending" and cluster.state_of(bad) == "failed"  # good: requeued
        assert "failing its attempts on lost node(s) n1: LookupError" in (cluster.stored(bad).end_reason or "")
        assert node.running == 0
        cluster.service.state.check_invariants()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body)
    no_reload(caplog)


def test_a_job_that_fails_when_its_node_says_hello_again_is_failed_and_the_node_is_welcome(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def body(cluster: Cluster) -> None:
        bad, good = await cluster.submit(2)
        _spoil_output(cluster.service.state.jobs[bad])
        socket = FakeSocket()  # the node comes back, having lost both orders: they are sent again
        cluster.service.node_connected(NodeChannel("n1", socket), Hello("n1", 4, 8192, []))
        cluster.socket = socket
        await cluster.turn()
        assert [order.config["job_id"] for order in cluster.sent(StartAttempt)] == [good]
        assert cluster.state_of(bad) == "failed" and cluster.state_of(good) == "dispatched"
        assert "after node n1 said hello: TypeError" in (cluster.stored(bad).end_reason or "")
        cluster.check()

    with caplog.at_level(logging.INFO):
        run(tmp_path, body)
    no_reload(caplog)


def _spoil_output(job: Job) -> None:
    """An output pattern no submission could give: making the job's order raises."""
    job.spec = msgspec.structs.replace(job.spec, output=None)


# -- pieces ------------------------------------------------------------------------------------


def test_every_field_of_changes_is_split_and_dropped_by_job() -> None:
    """A field added to Changes must be named in job_ids, drop_jobs and by_job (and merged:
    test_group_commit.py)."""
    known = {"new_jobs", "jobs", "tasks", "attempts", "nodes", "events", "given_up", "queues", "specs", "submissions",
             "payloads"}
    assert {f.name for f in dataclasses.fields(Changes)} == known
    changes = Changes()
    for job_id in (1, 2):
        job = Job(job_id, "a", "j", 0.0, 0, Resources(1, 100), TaskIndices(), False, None, Dependencies(), JobSpec())
        changes.new_jobs.append(job)
        changes.job(job, spec=True)
        changes.task(Task(job_id, 0, JobState.PENDING, 0.0))
        changes.attempt(Attempt(job_id, 0, 1, "n1", (0,), 0.0))
        changes.given_up_step(job_id, 0, 1, {"step": "mail", "tries": 5, "error": "down"})
        changes.event(0.0, "x", job_id)
        changes.submissions.append(SubmissionKey("a", f"key-{job_id}", (job_id,), 0.0))
        changes.payloads[job_id] = {"script": "true\n", "environment": {}, "stage_in": []}
    changes.node(Node("n1", 1, 1, NodeState.UP, 0.0))
    changes.queue("night", QueueRecord("night", starting=False))
    changes.events.append(EventRecord(0.0, "node_connected"))
    assert changes.job_ids() == {1, 2}
    common, parts = changes.by_job()
    assert set(parts) == {1, 2} and common.nodes == changes.nodes and [e.kind for e in common.events] == ["node_connected"]
    assert common.queues == changes.queues  # a queue is no job's: it stays whatever job is set aside
    for job_id, part in parts.items():
        assert part.job_ids() == {job_id} and not part.nodes and not part.queues
        assert len(part.new_jobs) == len(part.jobs) == len(part.tasks) == len(part.attempts) == len(part.given_up) == 1
        assert part.specs == {job_id} and [k.key for k in part.submissions] == [f"key-{job_id}"]
        assert list(part.payloads) == [job_id]
    changes.drop_jobs({1})
    assert changes.job_ids() == {2} and changes.nodes and changes.queues and len(changes.events) == 2
    assert list(changes.payloads) == [2]
    assert [k.key for k in changes.submissions] == ["key-2"]
    both = Changes(submissions=[SubmissionKey("a", "key-3", (3, 4), 0.0)])  # a submission of two jobs
    assert both.job_ids() == {3, 4}
    both.drop_jobs({4})  # one set aside: the key goes, a retry must not get a job that is not there
    assert not both


def test_dropping_a_job_drops_its_orders_acknowledgements_mail_and_end() -> None:
    outcome = Outcome()
    outcome.send("n1", Ack(["1.0.1", "2.0.1"]))
    outcome.send("n1", SignalAttempt("1.0.1", "terminate"))
    outcome.send("n1", StartAttempt("1.1.1", {}, "true"))  # type: ignore[typeddict-item]
    outcome.effects += [JobEnded(1), SendMail(1, "a", "s", "b"), JobEnded(2)]
    outcome.send("n1", Progress("2.0.1", []))
    outcome.drop_jobs({1})
    assert outcome.effects == [SendToNode("n1", Ack(["2.0.1"])), JobEnded(2), SendToNode("n1", Progress("2.0.1", []))]


def test_the_seam_is_off_unless_the_environment_turns_it_on() -> None:
    off = Faults.from_environment({})
    assert not off and off.report_handler(handle_report) is handle_report
    assert not Faults.from_environment({REPORT_RAISES: "no-colon"})
    on = Faults.from_environment({REPORT_RAISES: "exited:my:job"})
    assert on.report_raises == ("exited", "my:job") and on.describe() == f"{REPORT_RAISES}=exited:my:job"
    assert on.report_handler(handle_report) is not handle_report
