"""Queue instances suspended (Grid Engine's qmod -sq, -usq; `drover queue suspend|unsuspend
NAME[@NODE]`) in the controller's handlers, on a real (temporary) store: the queue's running jobs
there are frozen (or migrated, checkpointing on `x`), none of its jobs starts there, each task
keeps its reasons to be frozen ({"job", "queue"}: GE's `s` and `S`, independent), and a restarted
controller knows both the suspended instances and the reasons."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.unit.controller.test_checkpoint_handlers import CheckpointWorld

from drover.controller.handlers import queue_suspension
from drover.controller.handlers.node_reports import on_reports
from drover.controller.handlers.queue_load import queue_infos
from drover.core.errors import BadRequest, Conflict, Forbidden, NotFound
from drover.core.job_state import JobState
from drover.core.suspension import SuspendReason
from drover.protocol.node_channel import SignalAttempt, Suspended

JOB, QUEUE = SuspendReason.JOB, SuspendReason.QUEUE


class SuspensionWorld(CheckpointWorld):
    def suspend_queue(self, instance: str, user: str = "root", admin: bool = True, reason: str = "") -> list[object]:
        name, _, node = instance.partition("@")
        before = len(self.sent)
        self.run(queue_suspension.suspend(self.state, {}, name, node or None, reason, user, admin, self.now))
        return [s.message for s in self.sent[before:]]

    def unsuspend_queue(self, instance: str) -> list[object]:
        name, _, node = instance.partition("@")
        before = len(self.sent)
        self.run(queue_suspension.unsuspend(self.state, {}, name, node or None, "root", True, self.now))
        return [s.message for s in self.sent[before:]]

    def orders(self, action: str, *refs: str) -> tuple[list[object], list[object]]:
        """The action's results, and the orders it sent."""
        before = len(self.sent)
        results = self.act(action, *refs)
        return results, [s.message for s in self.sent[before:]]

    def node_did(self, attempt: str, suspended: bool, node: str = "n1") -> None:
        self.run(on_reports(self.state, node, [Suspended(attempt, suspended)], self.now))

    def task(self, job: int) -> tuple[JobState, frozenset[SuspendReason]]:
        task = self.state.jobs[job].tasks[0]
        return task.state, task.suspended_by


@pytest.fixture
def world(store_url: str) -> Iterator[SuspensionWorld]:
    made = SuspensionWorld(store_url)
    yield made
    made.store.close()


def test_gridengine_qmod_sq_suspends_the_jobs_of_a_queue_instance_and_starts_none(world: SuspensionWorld) -> None:
    job, order = world.running_with()
    assert world.suspend_queue("default@n1", reason="maintenance") == [SignalAttempt(order.attempt, "suspend")]
    assert world.state.nodes["n1"].suspended_queues == {"default": "maintenance (root)"}
    assert world.task(job) == (JobState.RUNNING, {QUEUE})  # wanted frozen; the node has not said so yet
    world.node_did(order.attempt, True)
    assert world.task(job) == (JobState.SUSPENDED, {QUEUE})
    # none of the queue's jobs starts there, and the waiting job says why
    (second,) = world.submit()
    assert world.schedule() == []
    assert "queue default is suspended on n1" in world.state.pending_reasons[second].detail
    (info,) = queue_infos(world.state, {}, world.now)
    assert info.suspended == {"n1": "maintenance (root)"}
    # unsuspended: the job is thawed and the waiting one starts
    assert world.unsuspend_queue("default") == [SignalAttempt(order.attempt, "resume")]
    world.node_did(order.attempt, False)
    assert world.task(job) == (JobState.RUNNING, frozenset())
    (started,) = world.schedule()
    assert started.attempt == f"{second}.0.1"


def test_a_queue_suspended_on_one_node_leaves_its_other_nodes_alone(world: SuspensionWorld) -> None:
    world.connect("n1", cpus=1)
    world.connect("n2", cpus=1)
    world.suspend_queue("default@n1")
    (job,) = world.submit()
    (order,) = world.schedule()
    assert world.state.attempts[(job, 0, 1)].node == "n2"
    world.started(order.attempt, node="n2")
    assert world.task(job) == (JobState.RUNNING, frozenset())


def test_gridengine_job_states_s_and_S_are_independent_unsuspending_the_queue_keeps_a_job_suspended_on_its_own(
        world: SuspensionWorld) -> None:
    job, order = world.running_with()
    world.act("suspend", str(job))
    world.node_did(order.attempt, True)
    assert world.suspend_queue("default@n1") == []  # frozen already: no second order
    assert world.task(job) == (JobState.SUSPENDED, {JOB, QUEUE})
    assert world.unsuspend_queue("default@n1") == []
    assert world.task(job) == (JobState.SUSPENDED, {JOB})
    results, sent = world.orders("resume", str(job))
    assert sent == [SignalAttempt(order.attempt, "resume")] and results[0].ok  # type: ignore[attr-defined]


def test_resuming_a_job_on_its_own_leaves_it_suspended_while_its_queue_instance_is(world: SuspensionWorld) -> None:
    job, order = world.running_with()
    world.suspend_queue("default")
    world.node_did(order.attempt, True)
    # suspended by its queue alone: a resume of the job is refused, and says why
    (result,), sent = world.orders("resume", str(job))
    assert not result.ok and sent == []  # type: ignore[attr-defined]
    assert "suspended by its queue instance (default@n1), not on its own" in result.message  # type: ignore[attr-defined]
    # suspended on its own too: a resume undoes that alone, and says it stays suspended
    world.act("suspend", str(job))
    (result,), sent = world.orders("resume", str(job))
    assert result.ok and sent == []  # type: ignore[attr-defined]
    assert "still suspended by its queue instance (default@n1)" in result.message  # type: ignore[attr-defined]
    assert world.task(job) == (JobState.SUSPENDED, {QUEUE})
    assert world.unsuspend_queue("default") == [SignalAttempt(order.attempt, "resume")]


def test_a_restarted_controller_keeps_the_suspended_instances_and_each_tasks_reasons(world: SuspensionWorld) -> None:
    job, order = world.running_with()
    world.suspend_queue("default@n1", reason="power work")
    world.act("suspend", str(job))
    world.node_did(order.attempt, True)
    world.reload()
    assert world.state.nodes["n1"].suspended_queues == {"default": "power work (root)"}
    assert world.task(job) == (JobState.SUSPENDED, {JOB, QUEUE})
    world.act("resume", str(job))
    assert world.unsuspend_queue("default@n1") == [SignalAttempt(order.attempt, "resume")]


def test_gridengine_checkpoint5_x_a_queue_suspend_migrates_a_job_checkpointing_on_x(world: SuspensionWorld) -> None:
    job, order = world.running_with(checkpoint="blcr")  # its occasions: sx
    assert world.suspend_queue("default@n1") == [SignalAttempt(order.attempt, "migrate", "requeue")]
    assert world.state.jobs[job].tasks[0].requeue_requested and "migrate_requested" in world.event_kinds(job)


def test_a_job_starting_while_its_queue_instance_is_suspended_is_frozen_as_it_starts(world: SuspensionWorld) -> None:
    world.connect()
    (job,) = world.submit()
    (order,) = world.schedule()  # its prolog runs
    assert world.suspend_queue("default@n1") == []
    before = len(world.sent)
    world.started(order.attempt)
    assert [s.message for s in world.sent[before:]] == [SignalAttempt(order.attempt, "suspend")]
    assert world.task(job) == (JobState.RUNNING, {QUEUE})


def test_queue_suspension_refusals_are_clear(world: SuspensionWorld) -> None:
    world.connect()
    with pytest.raises(Forbidden, match="only an operator may suspend queue default"):
        world.suspend_queue("default", user="alice", admin=False)
    with pytest.raises(NotFound, match="node 'n9' does not exist"):
        world.suspend_queue("default@n9")
    with pytest.raises(NotFound, match="queue 'nope' does not exist"):
        world.suspend_queue("nope")
    with pytest.raises(BadRequest, match="a reason is one line"):
        world.suspend_queue("default", reason="two\nlines")
    with pytest.raises(Conflict, match="queue instance default@n1 is not suspended"):
        world.unsuspend_queue("default@n1")
    world.suspend_queue("default@n1")
    with pytest.raises(Conflict, match="queue instance default@n1 is already suspended"):
        world.suspend_queue("default@n1")


@pytest.mark.parametrize("owner, refused", [("carol", True), ("alice", False)])
def test_a_queues_owner_suspends_and_resumes_only_their_own_running_jobs(
        world: SuspensionWorld, owner: str, refused: bool) -> None:
    """The queue's owner (not an operator) may suspend it where every job it freezes is theirs;
    another user's running job (alice's here) is an operator's to freeze or thaw."""
    from drover.config_schema import QueueSection

    sections = {"default": QueueSection(owner=owner)}
    job, order = world.running_with()  # alice's
    world.state.queues_in_effect = None  # scheduled without the sections: read them now

    def suspend() -> None:
        world.run(queue_suspension.suspend(world.state, sections, "default", None, "", owner, False, world.now))

    if refused:
        with pytest.raises(Forbidden, match=rf"queue default runs jobs of other users there \({job}\): "
                                            "suspending them needs an operator"):
            suspend()
        assert world.state.nodes["n1"].suspended_queues == {} and world.task(job) == (JobState.RUNNING, frozenset())
        world.suspend_queue("default")  # an operator may
        with pytest.raises(Forbidden, match="resuming them needs an operator"):
            world.run(queue_suspension.unsuspend(world.state, sections, "default", None, owner, False, world.now))
    else:
        suspend()
        assert world.task(job) == (JobState.RUNNING, {QUEUE})
        world.run(queue_suspension.unsuspend(world.state, sections, "default", None, owner, False, world.now))
        assert world.task(job) == (JobState.RUNNING, frozenset())
