"""A node lost while its attempts ran (gone longer than node_timeout_s, or back without knowing
them): each running attempt is a system failure, requeued as a new attempt while the job may
run again (at most until attempt 3), NODE_FAIL otherwise; an attempt whose job had already
exited is decided from its own exit; the node is told to stop what it still runs if it comes
back, and its late report is stale, counted nowhere. On plain data."""

from __future__ import annotations

from tests.helpers.controller_world import OK, World, world  # noqa: F401  (a fixture)

from drover.controller.handlers.node_reports import on_node_disconnected, on_nodes_lost
from drover.core.exit_status import MAX_SYSTEM_FAILURE_ATTEMPT
from drover.protocol.node_channel import Exiting, KnownAttempt, SignalAttempt

TIMEOUT_S = 10.0


def _lose_node(world: World, node: str = "n1") -> None:  # noqa: F811
    world.run(on_node_disconnected(world.state, node, world.now))
    world.now += TIMEOUT_S + 1
    world.run(on_nodes_lost(world.state, world.now, TIMEOUT_S))


def _events(of: World, job: int) -> list[tuple[str, dict[str, object]]]:
    return [(e.kind, e.detail) for _, e in of.store.events_of(job, 0, 1000)]


def test_a_running_attempt_on_a_lost_node_is_requeued_and_runs_elsewhere(world: World) -> None:  # noqa: F811
    world.connect("n1")
    (job,) = world.submit()
    (first,) = world.schedule()
    world.started(first.attempt)
    world.connect("n2")
    _lose_node(world, "n1")
    task = world.state.jobs[job].tasks[0]
    assert task.state.value == "pending"
    (lost,) = world.store.attempts_of(job)
    assert lost.exit is not None and lost.exit.get("node_lost") and lost.ended_at is not None
    assert ("requeued", {"trigger": "requeue", "before": "completing", "after": "pending",
                         "reason": "node n1 was lost; requeued as a new attempt"}) in _events(world, job)
    assert world.state.nodes["n1"].running == 0  # what it held is free
    (second,) = world.schedule()
    assert second.attempt == f"{job}.0.2" and second.config["node"] == "n2"
    world.started(second.attempt, node="n2")
    world.exited(second.attempt, OK, node="n2")
    assert world.store.load_job(job).state.value == "completed"  # type: ignore[union-attr]


def test_the_node_coming_back_is_told_to_stop_the_attempt_and_its_late_report_is_stale(world: World) -> None:  # noqa: F811
    world.connect("n1")
    (job,) = world.submit()
    (first,) = world.schedule()
    world.started(first.attempt)
    _lose_node(world, "n1")
    world.sent.clear()
    world.connect("n1", known=[KnownAttempt(first.attempt, running=True)])  # back from a partition
    stops = [s.message for s in world.sent if isinstance(s.message, SignalAttempt)]
    assert [(m.attempt, m.action, m.why) for m in stops] == [(first.attempt, "terminate", "stray")]
    world.exited(first.attempt, {**OK, "exit_code": 0})  # how the stale attempt ended, late
    task = world.state.jobs[job].tasks[0]
    assert task.state.value in ("pending", "dispatched")  # not completed by the stale report
    (attempt,) = [a for a in world.store.attempts_of(job) if a.number == 1]
    assert attempt.exit is not None and attempt.exit.get("node_lost")  # the record is not rewritten
    assert any(kind == "stale_report" for kind, _ in _events(world, job))
    assert not any(kind == "job_ended" for kind, _ in _events(world, job))


def test_a_job_that_may_not_run_again_ends_node_fail(world: World) -> None:  # noqa: F811
    world.connect("n1")
    (job,) = world.submit(rerunnable=False)
    (first,) = world.schedule()
    world.started(first.attempt)
    _lose_node(world)
    assert world.store.load_job(job).state.value == "node_fail"  # type: ignore[union-attr]
    assert ("node_failed", {"trigger": "lose_node", "before": "completing", "after": "node_fail",
                            "reason": "node n1 was lost; the job is not rerunnable"}) in _events(world, job)


def test_a_job_lost_on_node_after_node_fails_after_its_third_attempt(world: World) -> None:  # noqa: F811
    (job,) = world.submit()
    for number in range(1, MAX_SYSTEM_FAILURE_ATTEMPT + 2):
        world.connect("n1")
        (order,) = world.schedule()
        assert order.attempt == f"{job}.0.{number}"
        world.started(order.attempt)
        _lose_node(world)
    assert world.store.load_job(job).state.value == "node_fail"  # type: ignore[union-attr]


def test_an_attempt_whose_job_had_exited_keeps_its_outcome(world: World) -> None:  # noqa: F811
    world.connect("n1")
    (job,) = world.submit()
    (first,) = world.schedule()
    world.started(first.attempt)
    from drover.controller.handlers.node_reports import on_reports

    # The job exited 3; the node's cleanup was under way when the node was lost.
    world.run(on_reports(world.state, "n1", [Exiting(first.attempt, {**OK, "exit_code": 3})], world.now))  # type: ignore[typeddict-item]
    assert world.state.jobs[job].tasks[0].state.value == "completing"
    _lose_node(world)
    stored = world.store.load_job(job)
    assert stored is not None and stored.state is not None and stored.state.value == "failed"
    assert stored.tasks[0].exit_status == 3  # the job ran once, and failed on its own: never run again
    assert ("failed", {"trigger": "fail", "before": "completing", "after": "failed",
                       "reason": "node n1 was lost during the job's cleanup"}) in _events(world, job)


def test_a_cancel_asked_while_the_node_was_away_cancels(world: World) -> None:  # noqa: F811
    world.connect("n1")
    (job,) = world.submit()
    (first,) = world.schedule()
    world.started(first.attempt)
    world.run(on_node_disconnected(world.state, "n1", world.now))
    world.act("cancel", str(job))
    world.now += TIMEOUT_S + 1
    world.run(on_nodes_lost(world.state, world.now, TIMEOUT_S))
    assert world.store.load_job(job).state.value == "cancelled"  # type: ignore[union-attr]


def test_a_drained_node_starts_nothing_new_is_drained_once_idle_and_stays_so_across_a_reconnect(
        world: World) -> None:  # noqa: F811
    from drover.controller.handlers.node_reports import drain_node, resume_node

    world.connect("n1")
    world.submit()
    (first,) = world.schedule()
    world.started(first.attempt)
    world.run(drain_node(world.state, "n1", "disk swap", world.now))
    node = world.state.nodes["n1"]
    assert (node.state.value, node.reason) == ("draining", "disk swap")
    (waiting,) = world.submit()
    assert world.schedule() == []  # nothing new starts on a draining node
    world.exited(first.attempt, OK)
    world.schedule()
    assert node.state.value == "drained"
    world.run(on_node_disconnected(world.state, "n1", world.now))
    world.connect("n1")  # a restart of its execd keeps the drain
    assert (node.state.value, node.reason) == ("drained", "disk swap")
    assert world.store.load_nodes()["n1"].drain == "disk swap"
    world.run(resume_node(world.state, "n1", world.now))
    assert (node.state.value, node.reason, node.drain) == ("up", None, None)
    (second,) = world.schedule()
    assert second.attempt == f"{waiting}.0.1"
