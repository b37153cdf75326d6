"""Every attempt a node ran has exactly one `started` event in its job's history, before its
end, whatever reached the controller and in whatever order: a Started report lost with a
controller killed between the node's start and its end, an end report sent again after a
restart, a late Started after the end. An attempt that never ran has none."""

from __future__ import annotations

from typing import Any

from tests.helpers.controller_world import OK, World

from drover.controller.handlers.node_reports import on_reports
from drover.protocol.node_channel import Exited, Exiting, KnownAttempt, Started, Welcome
from drover.records import ExitStatus, Usage

STARTED_AT, ENDED_AT = 900.5, 901.5  # the node's times, before the controller's clock (1000 on)


def usage(started_at: float = STARTED_AT, ended_at: float = ENDED_AT) -> Usage:
    return {"user_cpu_s": 0.1, "sys_cpu_s": 0.0, "max_rss_kib": 1000, "minor_faults": 0, "major_faults": 0,
            "voluntary_switches": 0, "involuntary_switches": 0, "wall_s": ended_at - started_at,
            "started_at": started_at, "ended_at": ended_at}


def exited(attempt: str, record: dict[str, Any] | None = None, ran: bool = True) -> Exited:
    """The node's final report; `ran`: its job ran (the report carries its start and usage)."""
    status: ExitStatus = dict(record or OK)  # type: ignore[assignment]
    return Exited(attempt, status, usage() if ran else None, STARTED_AT if ran else None)


def exiting(attempt: str) -> Exiting:
    return Exiting(attempt, dict(OK), usage(), STARTED_AT)  # type: ignore[arg-type]


def report(world: World, *reports: Started | Exiting | Exited) -> None:
    world.run(on_reports(world.state, "n1", list(reports), world.now, store=world.store))


def started_events(world: World, job: int) -> list[Any]:
    return [event for _, event in world.store.events_of(job, 0, 1000) if event.kind == "started"]


def kinds(world: World, job: int) -> list[str]:
    return [kind for kind in world.event_kinds(job) if kind in ("started", "exited", "completed", "job_ended")]


def dispatched_then_restarted(world: World) -> tuple[int, str]:
    """A job dispatched to n1, whose Started report never reached the controller: the controller
    restarts (its working set from the store) and the node says hello again, the attempt ended
    meanwhile (in its cleanup, not running)."""
    world.connect()
    (job,) = world.submit()
    (order,) = world.schedule()
    world.reload()
    world.connect(known=[KnownAttempt(order.attempt, False)])
    assert world.state.jobs[job].tasks[0].state.value == "dispatched"
    return job, order.attempt


def test_an_end_report_of_an_attempt_whose_start_was_lost_records_the_start_first_at_the_nodes_time(
        world: World) -> None:
    job, attempt = dispatched_then_restarted(world)
    report(world, exited(attempt))
    assert kinds(world, job) == ["started", "exited", "completed", "job_ended"]
    (event,) = started_events(world, job)
    assert event.time == STARTED_AT and event.attempt == 1
    assert event.detail["before"] == "dispatched" and event.detail["after"] == "running"
    assert event.detail["learned_from"] == "exited"
    (stored,) = world.store.attempts_of(job)
    assert stored.started_at == STARTED_AT and stored.ended_at == ENDED_AT


def test_an_end_report_sent_again_after_a_second_restart_adds_no_second_start(world: World) -> None:
    """The controller recorded the end, then was killed before its acknowledgement reached the
    node, which sends the same report to the controller that starts next."""
    job, attempt = dispatched_then_restarted(world)
    report(world, exited(attempt))
    world.reload()
    world.connect(known=[KnownAttempt(attempt, False)])
    report(world, exited(attempt))
    assert kinds(world, job) == ["started", "exited", "completed", "job_ended"]


def test_the_exiting_report_records_the_start_and_the_final_one_after_a_restart_does_not_again(
        world: World) -> None:
    job, attempt = dispatched_then_restarted(world)
    report(world, exiting(attempt))
    assert world.state.jobs[job].tasks[0].state.value == "completing"
    world.reload()
    world.connect(known=[KnownAttempt(attempt, False)])
    report(world, exited(attempt))
    assert kinds(world, job) == ["started", "exited", "completed", "job_ended"]
    assert started_events(world, job)[0].detail["learned_from"] == "exiting"


def test_a_started_report_that_comes_after_the_end_adds_nothing(world: World) -> None:
    world.connect()
    (job,) = world.submit()
    (order,) = world.schedule()
    report(world, exiting(order.attempt), Started(order.attempt, 123, STARTED_AT))
    report(world, exited(order.attempt))
    report(world, Started(order.attempt, 123, STARTED_AT))
    assert kinds(world, job) == ["started", "exited", "completed", "job_ended"]


def test_an_attempt_its_node_started_keeps_the_one_start_its_report_made(world: World) -> None:
    job, attempt = world.running()
    world.reload()
    world.connect(known=[KnownAttempt(attempt, False)])
    report(world, exited(attempt))
    (event,) = started_events(world, job)
    assert event.detail.get("job_pid") == 123 and "learned_from" not in event.detail


def test_an_attempt_running_at_hello_after_a_restart_is_started_once_whatever_its_end_report_says(
        world: World) -> None:
    world.connect()
    (job,) = world.submit()
    (order,) = world.schedule()
    world.reload()
    world.connect(known=[KnownAttempt(order.attempt, True)])
    assert world.state.jobs[job].tasks[0].state.value == "running"
    report(world, exited(order.attempt))
    assert kinds(world, job) == ["started", "exited", "completed", "job_ended"]


def test_an_attempt_that_never_ran_gets_no_start(world: World) -> None:
    """A cancel while the prolog ran (the job never started: no start time in its report), and
    one whose set-up failed: no `started` event, as before."""
    world.connect(cpus=2)
    cancelled, failed = world.submit(), world.submit()
    first, second = world.schedule()
    world.act("cancel", str(cancelled[0]))
    report(world, exited(first.attempt, dict(OK, exit_code=None, terminated=True), ran=False))
    report(world, exited(second.attempt, dict(OK, exit_code=None, failure="the prolog failed"), ran=False))
    assert world.state.ended_state(cancelled[0], world.store) == "cancelled"
    for job in (cancelled[0], failed[0]):
        assert "started" not in world.event_kinds(job) and world.ended.count(job) == 1


def test_a_promise_whose_start_was_lost_is_counted_started_once_by_the_metrics(world: World) -> None:
    """A promise behind a running attempt: the node starts it as that one ends, and its Started
    report is lost; its end records the start, with the promise's mark the metrics count."""
    from tests.unit.controller.test_promised_attempts import one_cpu_busy

    running, promised, jobs = one_cpu_busy(world)
    world.exited(running)
    report(world, exited(promised.attempt))
    (event,) = started_events(world, jobs[1])
    assert event.detail["promised"] is True
    tallies = world.state.tallies
    assert tallies.attempts_started == 2 and sum(tallies.attempts_ended.values()) == 2


def test_an_attempt_running_at_hello_whose_start_was_lost_starts_at_the_time_its_node_says(
        world: World) -> None:
    """Its Started report never reached the store (the controller was killed, or held the report
    for company when it was): the node's hello says when the job started, and the start is
    recorded then, not at the hello, so its wall clock and its share are the job's."""
    world.connect()
    (job,) = world.submit()
    (order,) = world.schedule()
    world.reload()
    world.connect(known=[KnownAttempt(order.attempt, True, started_at=STARTED_AT)])
    (event,) = started_events(world, job)
    assert event.time == STARTED_AT and event.detail["learned_from"] == "hello"
    (stored,) = world.store.attempts_of(job)
    assert stored.started_at == STARTED_AT
    report(world, exited(order.attempt))
    assert kinds(world, job) == ["started", "exited", "completed", "job_ended"]


def test_a_start_time_a_node_says_is_ahead_of_the_controllers_clock_is_recorded_at_the_hello(
        world: World) -> None:
    """A node's clock ahead (or a time that is no number) puts no start after the hello."""
    world.connect(cpus=2)
    first, second = world.submit(), world.submit()
    one, two = world.schedule()
    world.reload()
    world.connect(cpus=2, known=[KnownAttempt(one.attempt, True, started_at=world.now + 50),
                                 KnownAttempt(two.attempt, True, started_at=float("nan"))])
    for job in (first[0], second[0]):
        (event,) = started_events(world, job)
        assert event.time <= world.now


def test_an_attempt_whose_prologs_run_at_hello_is_not_started_until_its_job_starts(world: World) -> None:
    """The node says hello while an attempt's shepherd runs its prologs (its job not started):
    the attempt stays dispatched, and its start is recorded when its node reports it; one whose prolog then fails never gets a start, nor a run time."""
    world.connect(cpus=2)
    first, second = world.submit(), world.submit()
    one, two = world.schedule()
    world.reload()
    world.connect(cpus=2, known=[KnownAttempt(one.attempt, True, job_started=False),
                                 KnownAttempt(two.attempt, True, job_started=False)])
    for job in (first[0], second[0]):
        assert world.state.jobs[job].tasks[0].state.value == "dispatched"
        assert started_events(world, job) == []
    report(world, Started(one.attempt, 123, STARTED_AT))
    assert len(started_events(world, first[0])) == 1
    assert world.state.jobs[first[0]].tasks[0].state.value == "running"
    report(world, exited(two.attempt, dict(OK, exit_code=None, failure="the prolog failed"), ran=False))
    assert "started" not in world.event_kinds(second[0]) and world.ended.count(second[0]) == 1
    (stored,) = world.store.attempts_of(second[0])
    assert stored.started_at is None


def test_an_attempt_of_a_node_of_an_earlier_version_running_at_hello_is_started_there(world: World) -> None:
    """A node daemon that does not say whether the job started (job_started None) is taken at
    its word, running, as before."""
    world.connect()
    (job,) = world.submit()
    (order,) = world.schedule()
    world.reload()
    world.connect(known=[KnownAttempt(order.attempt, True)])
    assert world.state.jobs[job].tasks[0].state.value == "running" and len(started_events(world, job)) == 1


def test_a_node_that_names_another_nodes_attempt_at_its_hello_changes_nothing_of_it(world: World) -> None:
    """A node taken over says hello naming an attempt sent to another node, as running with its
    job started, or as set up and promised: the attempt stays as its own node left it, with no
    start recorded; the hostile node is not told to stop it either (it runs elsewhere)."""
    world.connect("n1", cpus=1)
    (job,) = world.submit()
    (order,) = world.schedule()
    assert order.config["node"] == "n1"
    before = len(world.sent)
    world.connect("n2", cpus=1, known=[KnownAttempt(order.attempt, True, started_at=world.now, job_started=True,
                                                    moved=True)])
    task = world.state.jobs[job].tasks[0]
    assert task.state.value == "dispatched" and started_events(world, job) == []
    (attempt,) = [a for a in world.state.attempts.values() if a.job_id == job]
    assert attempt.node == "n1" and attempt.started_at is None
    assert not [s for s in world.sent[before:] if s.node == "n2" and not isinstance(s.message, Welcome)]
    world.started(order.attempt, node="n2")  # nor does its report of the start count
    assert task.state.value == "dispatched" and started_events(world, job) == []
    world.started(order.attempt, node="n1")
    assert task.state.value == "running" and len(started_events(world, job)) == 1
