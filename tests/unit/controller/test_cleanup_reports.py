"""What the controller keeps of a node's cleanup: a step the node gave up stays with the attempt,
with its tries and error, through the final report and after the job ended."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.helpers.controller_world import OK, World

from drover.controller.handlers.node_reports import on_reports
from drover.protocol.node_channel import Ack, Exited, Progress
from drover.records import GivenUpStep

HOOK: GivenUpStep = {"step": "exit_hook", "tries": 2, "error": "the exit hook exited with status 3: no"}


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path / "drover.db")


def report(world: World, *messages: object, node: str = "n1") -> list[object]:
    before = len(world.sent)
    world.run(on_reports(world.state, node, list(messages), world.now, store=world.store))  # type: ignore[arg-type]
    return [s.message for s in world.sent[before:]]


def stored_cleanup(world: World, job: int) -> dict[str, object]:
    (attempt,) = world.store.attempts_of(job)
    assert attempt.cleanup is not None
    return dict(attempt.cleanup)


def test_a_step_given_up_before_the_report_survives_the_report(world: World) -> None:
    job, name = world.running()
    replies = report(world, Progress(name, ["exit_hook"], "exit_hook", 2, HOOK["error"], given_up=True))
    assert Ack([name], "given_up:exit_hook") in replies
    report(world, Exited(name, dict(OK), done=["exit_hook", "stage_out", "record", "report"],  # type: ignore[arg-type]
                         given_up=[HOOK]))
    cleanup = stored_cleanup(world, job)
    assert world.ended == [job]
    assert cleanup["given_up"] == [HOOK] and cleanup["error"] is None and cleanup["step"] is None
    failed = [e for _, e in world.store.events_of(job, 0, 1000) if e.kind == "cleanup_failed"]
    assert [e.detail["error"] for e in failed] == [f"exit_hook given up: {HOOK['error']}"]
    assert failed[0].detail["given_up"] is True
    steps = [e.detail["step"] for _, e in world.store.events_of(job, 0, 1000) if e.kind == "cleanup_step"]
    assert steps == ["stage_out", "record", "report"]  # the hook was not done: it was given up


def test_a_step_given_up_whose_progress_was_lost_arrives_with_the_report(world: World) -> None:
    job, name = world.running()
    report(world, Exited(name, dict(OK), done=["exit_hook", "stage_out", "record", "report"],  # type: ignore[arg-type]
                         given_up=[HOOK]))
    assert stored_cleanup(world, job)["given_up"] == [HOOK]


def test_a_step_given_up_after_the_job_ended_is_kept_with_the_stored_attempt(world: World) -> None:
    job, name = world.running()
    report(world, Exited(name, dict(OK), done=["exit_hook", "stage_out", "record", "report"]))  # type: ignore[arg-type]
    assert world.ended == [job] and world.state.attempt_by_name(name) is None
    remove = "cannot remove the spool /spool/removing.1.0.1: /spool/removing.1.0.1/f: Operation not permitted"
    done = ["exit_hook", "stage_out", "record", "report", "mail", "remove"]
    for _ in range(2):  # said again after a reconnection: kept once
        replies = report(world, Progress(name, done, "remove", 5, remove, given_up=True))
        assert Ack([name], "given_up:remove") in replies
    cleanup = stored_cleanup(world, job)
    assert cleanup["given_up"] == [{"step": "remove", "tries": 5, "error": remove}]
    assert cleanup["done"] == ["exit_hook", "stage_out", "record", "report"]
    world.reload()
    assert stored_cleanup(world, job)["given_up"] == [{"step": "remove", "tries": 5, "error": remove}]


def test_a_failed_try_shows_while_the_pipeline_waits_and_is_cleared_by_the_report(world: World) -> None:
    job, name = world.running()
    report(world, Progress(name, [], "exit_hook", 1, "the exit hook exited with status 3: no"))
    attempt = world.state.attempt_by_name(name)
    assert attempt is not None and attempt.cleanup is not None
    assert (attempt.cleanup["step"], attempt.cleanup["tries"]) == ("exit_hook", 1)
    assert "given_up" not in attempt.cleanup
    report(world, Exited(name, dict(OK), done=["exit_hook", "stage_out", "record", "report"]))  # type: ignore[arg-type]
    cleanup = stored_cleanup(world, job)
    assert cleanup["error"] is None and "given_up" not in cleanup


def test_another_node_adds_nothing_to_an_attempt_whose_job_ended(world: World) -> None:
    """Once the job ended its attempt is no longer in the working set: the store says which node
    ran it, and a report of any kind from another node is acknowledged (so that it is not sent
    again) and changes nothing, as for a live attempt."""
    world.connect("n2")
    job, name = world.running()
    report(world, Exited(name, dict(OK), done=["exit_hook", "stage_out", "record", "report"]))  # type: ignore[arg-type]
    assert world.ended == [job] and world.state.attempt_by_name(name) is None
    events = world.event_kinds(job)
    done = ["exit_hook", "stage_out", "record", "report", "mail", "remove"]
    forged = [Progress(name, done, "remove", 5, "forged by n2", given_up=True),
              Progress(name, done, "mail", 1, "forged by n2"),
              Exited(name, dict(OK, exit_code=9), done=done,  # type: ignore[arg-type]
                     given_up=[{"step": "mail", "tries": 3, "error": "forged by n2"}])]
    replies = report(world, *forged, node="n2")
    assert Ack([name], "given_up:remove") in replies and Ack([name]) in replies
    assert "given_up" not in stored_cleanup(world, job)
    assert world.event_kinds(job) == events
    (attempt,) = world.store.attempts_of(job)
    assert attempt.exit == OK
    # The node that ran it still adds its late step.
    report(world, Progress(name, done, "remove", 5, "cannot remove the spool", given_up=True))
    assert stored_cleanup(world, job)["given_up"] == [{"step": "remove", "tries": 5,
                                                       "error": "cannot remove the spool"}]


def test_a_late_report_of_an_attempt_the_store_does_not_hold_changes_nothing(world: World) -> None:
    job, name = world.running()
    events = world.event_kinds(job)
    replies = report(world, Progress(f"{job}.0.7", ["remove"], "remove", 5, "no such attempt", given_up=True),
                     Progress("999.0.1", ["remove"], "remove", 5, "no such job", given_up=True))
    assert Ack([f"{job}.0.7", "999.0.1"], "given_up:remove") in replies
    assert world.event_kinds(job) == events and world.event_kinds(999) == []
