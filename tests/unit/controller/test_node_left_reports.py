"""A node's report that it left (`drover execd --leave-on-stop`, execd/leaving.py) arriving at the
controller: it decides an attempt still undecided as the node's loss, but never rewrites the exit
record of an attempt already decided nor ends its task twice; and a node speaks only for the
attempts it was sent, never another node's (a node, or anyone holding a node's channel, is an
actor here)."""

from __future__ import annotations

from typing import Any

from tests.helpers.controller_world import OK, World

from drover.controller.handlers.node_reports import on_reports
from drover.protocol.node_channel import (
    Ack,
    Enforced,
    Exited,
    Exiting,
    Progress,
    StagedOut,
    Started,
    Suspended,
)

WHY = "node n1 left: its slurm allocation 4711 ended"
LEFT = dict(OK, exit_code=None, signal=15, terminated=True, node_left=True, failure=WHY)


def report(world: World, node: str, *reports: Any) -> list[object]:
    before = len(world.sent)
    world.run(on_reports(world.state, node, list(reports), world.now))
    return [s.message for s in world.sent[before:]]


def stored_exit(world: World, job: int, number: int = 1) -> object:
    attempt = next(a for a in world.store.attempts_of(job) if a.number == number)
    return attempt.exit


def test_a_node_left_report_for_an_attempt_already_ended_changes_neither_its_record_nor_its_end(
        world: World) -> None:
    """Task 0 of an array ended on its own (decided: completed) while task 1 runs on: the job is
    still in the working set, task 0's attempt with it. The node leaves and reports task 0's end
    again, as left: its record stays the job's own end, and the task does not end again."""
    world.connect(cpus=2)
    (job,) = world.submit(array="0-1")
    ended, running = (order.attempt for order in world.schedule())
    world.started(ended)
    world.started(running)
    world.exited(ended)
    assert world.state.jobs[job].tasks[0].state.value == "completed"
    events = world.event_kinds(job)
    said = report(world, "n1", Exited(ended, dict(LEFT)))  # the node leaves, and says it again
    assert Ack([ended]) in said  # acknowledged, so the node stops sending it
    assert world.state.attempt_by_name(ended).exit == OK  # type: ignore[union-attr]
    assert stored_exit(world, job) == OK
    assert world.state.jobs[job].tasks[0].state.value == "completed"
    assert world.event_kinds(job) == events  # no second end, no node's loss
    world.exited(running)
    assert world.ended == [job]
    assert world.event_kinds(job).count("job_ended") == 1
    assert stored_exit(world, job) == OK


def test_a_node_left_report_for_a_requeued_attempt_leaves_the_next_attempt_alone(world: World) -> None:
    world.connect()
    (job,) = world.submit()
    (first,) = world.schedule()
    world.exited(first.attempt, dict(OK, exit_code=99))  # decided: requeued
    (second,) = world.schedule()
    report(world, "n1", Exited(first.attempt, dict(LEFT)))
    assert stored_exit(world, job) == dict(OK, exit_code=99)
    task = world.state.jobs[job].tasks[0]
    assert (task.state.value, task.attempt) == ("dispatched", 2)
    assert world.state.latest_attempt(task).exit is None  # type: ignore[union-attr]


def test_a_node_left_report_after_its_exiting_one_decides_the_attempt_once_as_the_nodes_loss(world: World) -> None:
    """The outer scheduler's signal reached the job a moment before its node began to leave: the
    attempt's first record (its own end) is replaced by the final one, decided once, requeued as
    a lost node's job is."""
    job, attempt = world.running()
    report(world, "n1", Exiting(attempt, dict(OK, signal=15, exit_code=None)))
    report(world, "n1", Exited(attempt, dict(LEFT)))
    assert stored_exit(world, job) == LEFT
    report(world, "n1", Exited(attempt, dict(OK)))  # a later, different final report: decided already
    assert stored_exit(world, job) == LEFT
    assert world.state.jobs[job].tasks[0].state.value == "pending"
    assert world.ended == []


def test_a_node_speaks_only_for_its_own_attempts(world: World) -> None:
    """n2 reports on an attempt n1 runs: it started, it was suspended, it was killed over its
    memory, it exited, it left, it staged files out, its cleanup went so far. Each is
    acknowledged where a node waits for that, and none changes anything."""
    job, attempt = world.running()
    world.connect("n2")
    before = world.event_kinds(job)
    said = report(world, "n2", Started(attempt, 999, world.now), Suspended(attempt, True),
                  Enforced(attempt, "killed_over_memory", {"rss_kib": 1 << 30}),
                  Exiting(attempt, dict(LEFT)), StagedOut(attempt, []),
                  Exited(attempt, dict(LEFT), done=["epilog"]),
                  Progress(attempt, ["epilog"], "mail", 3, "refused", given_up=True))
    for kind in ("report", "stage_out", "given_up:mail"):
        assert Ack([attempt], kind) in said, (kind, said)
    running = world.state.latest_attempt(world.state.jobs[job].tasks[0])
    assert running is not None and running.exit is None and running.cleanup is None
    assert world.state.jobs[job].tasks[0].state.value == "running"
    assert stored_exit(world, job) is None
    assert world.event_kinds(job) == before
    world.exited(attempt)  # its own node's report is taken
    assert world.ended == [job]

