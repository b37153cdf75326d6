"""Promises in the controller ([scheduler] promises): a task that cannot start now is ordered to
its node to follow a running attempt, holds no room until that attempt ends, then takes its room
(as its node starts it); a cancel takes it back before it starts; a reload finds it promised
again; and without the setting nothing is promised."""

from __future__ import annotations

from typing import Any

import pytest
from tests.helpers.controller_world import World, world  # noqa: F401  (a fixture)

from drover.config_schema import SchedulerSection
from drover.controller.handlers import dispatch
from drover.controller.handlers.dispatch import OrderOptions
from drover.controller.handlers.node_reports import drain_node, on_reports
from drover.protocol.node_channel import (
    KnownAttempt,
    SignalAttempt,
    StartAttempt,
    Started,
    StartPromisedNow,
)

PROMISING = OrderOptions(1.0, scheduler=SchedulerSection(promises=True))


def one_cpu_busy(world: World, options: OrderOptions = PROMISING) -> tuple[str, StartAttempt, list[int]]:  # noqa: F811
    """A node of one CPU and four jobs: the first started, the second promised behind it in the
    same pass; the running attempt's name, the promised order, the jobs."""
    world.options = options
    world.connect(cpus=1)
    jobs = world.submit(script="sleep 1\n") + world.submit() + world.submit() + world.submit()
    first, promised = world.schedule()
    assert first.after is None
    world.started(first.attempt)
    return first.attempt, promised, jobs


def test_the_next_task_is_promised_behind_the_running_one_and_takes_its_room_when_it_ends(world: World) -> None:  # noqa: F811
    running, promised, jobs = one_cpu_busy(world)
    assert promised.after == running and promised.attempt == f"{jobs[1]}.0.1"
    node = world.state.nodes["n1"]
    assert node.holders == {(jobs[0], 0, 1)}  # the promised one holds nothing yet
    assert world.schedule() == []  # one promise behind each attempt
    world.started(promised.attempt)  # its node starts it the moment the first one's shepherd is gone...
    world.exited(running)  # ...and reports the first one's end after its cleanup
    assert node.holders == {(jobs[1], 0, 1)}
    (next_one,) = world.schedule()
    assert next_one.after == promised.attempt and next_one.attempt == f"{jobs[2]}.0.1"


def test_a_cancel_takes_a_promise_back_before_it_starts(world: World) -> None:  # noqa: F811
    running, promised, jobs = one_cpu_busy(world)
    world.act("cancel", str(jobs[1]))
    stops = [s.message for s in world.sent if isinstance(s.message, SignalAttempt)]
    assert [(s.attempt, s.action, s.why) for s in stops] == [(promised.attempt, "terminate", "cancel")]
    world.exited(promised.attempt, {"exit_code": None, "signal": None, "failure": None, "timed_out": False,
                                    "terminated": True, "out_of_memory": False})
    assert world.state.ended_state(jobs[1], world.store) == "cancelled"
    assert world.state.nodes["n1"].holders == {(jobs[0], 0, 1)}  # the running one's room is its own still
    (again,) = world.schedule()  # the next in order is promised in its place
    assert again.after == running and again.attempt == f"{jobs[2]}.0.1"


def test_a_reloaded_controller_finds_its_promises(world: World) -> None:  # noqa: F811
    running, promised, jobs = one_cpu_busy(world)
    world.reload()
    assert world.state.followers.as_dict() == {(jobs[0], 0, 1): (jobs[1], 0, 1)}
    assert world.state.nodes["n1"].holders == {(jobs[0], 0, 1)}
    assert world.schedule() == []
    world.exited(running)
    assert world.state.nodes["n1"].holders == {(jobs[1], 0, 1)}


def test_nothing_is_promised_without_the_setting(world: World) -> None:  # noqa: F811
    world.options = OrderOptions(1.0, scheduler=SchedulerSection(promises=False))  # said, whatever the default
    world.connect(cpus=1)
    world.submit()
    world.submit()
    (first,) = world.schedule()
    world.started(first.attempt)
    assert world.schedule() == []


def test_a_job_that_outranks_a_promised_one_takes_its_promise(world: World) -> None:  # noqa: F811
    running, promised, jobs = one_cpu_busy(world)
    (urgent,) = world.submit(priority=10)
    before = len(world.sent)
    assert world.schedule() == []  # this pass takes the promise back; the next gives it
    stops = [s.message for s in world.sent[before:] if isinstance(s.message, SignalAttempt)]
    assert [(s.attempt, s.action, s.why) for s in stops] == [(promised.attempt, "terminate", "requeue")]
    assert "promise_taken_back" in world.event_kinds(jobs[1])
    world.exited(promised.attempt, {"exit_code": None, "signal": None, "failure": None, "timed_out": False,
                                    "terminated": True, "out_of_memory": False})
    (given,) = world.schedule()
    assert given.after == running and given.attempt == f"{urgent}.0.1"
    world.exited(running)
    (after_it,) = world.schedule()  # the one taken back waits again, in its turn: next
    assert after_it.attempt == f"{jobs[1]}.0.2" and after_it.after == given.attempt


def test_a_promise_is_taken_back_in_the_planners_order_not_the_plain_one(world: World) -> None:  # noqa: F811
    """With fair share weighed, bob's job (he has used nothing) comes before alice's promised one
    (she has run for a minute) in the planner's order, though their own priorities are equal and
    hers is older: her promise is taken back for his job, as the planner would place them."""
    fair = OrderOptions(1.0, scheduler=SchedulerSection(promises=True, priority_weight_fairshare=1000.0))
    running, promised, jobs = one_cpu_busy(world, fair)
    world.now += 60
    (bobs,) = world.submit(owner="bob")
    before = len(world.sent)
    assert world.schedule() == []
    stops = [s.message for s in world.sent[before:] if isinstance(s.message, SignalAttempt)]
    assert [(s.attempt, s.why) for s in stops] == [(promised.attempt, "requeue")]
    world.exited(promised.attempt, {"exit_code": None, "signal": None, "failure": None, "timed_out": False,
                                    "terminated": True, "out_of_memory": False})
    (given,) = world.schedule()
    assert given.attempt == f"{bobs}.0.1" and given.after == running


def test_draining_the_node_takes_its_promises_back(world: World) -> None:  # noqa: F811
    """A promise is a start that has not happened: a node drained (or in error) must not make it
    happen. The promised task waits again, nothing of it ran, and nothing is promised there again."""
    running, promised, jobs = one_cpu_busy(world)
    before = len(world.sent)
    world.run(drain_node(world.state, "n1", "disk swap", world.now))
    stops = [s.message for s in world.sent[before:] if isinstance(s.message, SignalAttempt)]
    assert [(s.attempt, s.action, s.why) for s in stops] == [(promised.attempt, "terminate", "requeue")]
    assert "promise_taken_back" in world.event_kinds(jobs[1])
    world.exited(promised.attempt, {"exit_code": None, "signal": None, "failure": None, "timed_out": False,
                                    "terminated": True, "out_of_memory": False})
    assert world.schedule() == []
    world.exited(running)
    assert world.state.nodes["n1"].holders == set()
    assert world.schedule() == []  # drained: nothing starts there
    assert world.state.ended_state(jobs[1], world.store) is None  # it waits, to run elsewhere or later


def test_a_node_in_error_takes_its_promises_back(world: World) -> None:  # noqa: F811
    """Two CPUs: two jobs start, two are promised behind them; one of the starts fails on the
    node (it could not prepare it), which puts the node in ERROR: both promises are taken back."""
    world.options = PROMISING
    world.connect(cpus=2)
    jobs = [job for _ in range(4) for job in world.submit(script="sleep 1\n")]
    orders = world.schedule()
    started = [order.attempt for order in orders if order.after is None]
    promised = sorted(order.attempt for order in orders if order.after is not None)
    assert len(started) == 2 and promised == [f"{jobs[2]}.0.1", f"{jobs[3]}.0.1"]
    world.started(started[0])
    before = len(world.sent)
    world.exited(started[1], {"exit_code": None, "signal": None, "failure": "could not prepare: disk full",
                              "timed_out": False, "terminated": False, "out_of_memory": False, "node_fault": True})
    assert world.state.nodes["n1"].state.value == "error"
    stops = [s.message for s in world.sent[before:] if isinstance(s.message, SignalAttempt)]
    assert sorted((s.attempt, s.why) for s in stops) == [(attempt, "requeue") for attempt in promised]


def test_a_node_that_says_hello_again_with_a_promise_has_it_still_promised(world: World) -> None:  # noqa: F811
    """A node reconnecting (to a restarted or new active controller) says which attempts it
    holds promised: they are not counted as started, and still follow the one before them."""
    running, promised, jobs = one_cpu_busy(world)
    world.connect(known=[KnownAttempt(running, True), KnownAttempt(promised.attempt, True, promised=True)])
    attempt = world.state.attempt_by_name(promised.attempt)
    assert attempt is not None and attempt.started_at is None
    assert world.state.jobs[jobs[1]].tasks[0].state.value == "dispatched"
    assert world.state.followers.as_dict() == {(jobs[0], 0, 1): (jobs[1], 0, 1)}


TAKEN_BACK = {"exit_code": None, "signal": None, "failure": None, "timed_out": False, "terminated": True,
              "out_of_memory": False}


def two_cpus_one_promise(world: World) -> tuple[str, str, StartAttempt, int]:  # noqa: F811
    """Two CPUs: a long job and a short one run, a third is promised behind the long one (the
    first in the promises' order); returns the long and short attempts, the promise, the third."""
    world.options = PROMISING
    world.connect(cpus=2)
    long, short, third = world.submit(script="sleep 3600\n") + world.submit() + world.submit()
    starts = world.schedule()
    long_attempt, short_attempt = (s.attempt for s in starts if s.after is None)
    (promised,) = [s for s in starts if s.after is not None]
    assert promised.attempt == f"{third}.0.1" and promised.after == long_attempt
    world.started(long_attempt)
    world.started(short_attempt)
    return long_attempt, short_attempt, promised, third


def test_a_promise_behind_a_long_job_starts_in_place_when_room_frees_beside_it(world: World) -> None:  # noqa: F811
    """A promise must not make its task wait longer than no promise would: when the short job
    ends first, its room is free while the promised task still waits for the long one. Its node
    is told to start it there now, as the same attempt; the room is kept for it meanwhile, and
    once its node says it started there it holds that room and follows no one."""
    long_attempt, short_attempt, promised, third = two_cpus_one_promise(world)
    short_cpus = world.state.attempt_by_name(short_attempt).cpu_ids  # type: ignore[union-attr]
    world.exited(short_attempt)
    before = len(world.sent)
    (also,) = world.submit()  # ranks behind the promised task: it must not take the freed room
    assert world.schedule() == []
    orders = [s.message for s in world.sent[before:] if isinstance(s.message, (SignalAttempt, StartPromisedNow))]
    assert orders == [StartPromisedNow(promised.attempt, list(short_cpus))]
    assert "promise_started_in_place" in world.event_kinds(third)
    assert "promise_taken_back" not in world.event_kinds(third)
    assert world.schedule() == []  # the room stays kept until the node answers
    world.run(on_reports(world.state, "n1", [Started(promised.attempt, 5, world.now, moved=True)], world.now))
    moved = world.state.attempt_by_name(promised.attempt)
    assert moved is not None and moved.cpu_ids == short_cpus and moved.after is None and moved.moving_to is None
    assert not world.state.followers
    (promised_next,) = world.schedule()
    assert promised_next.attempt == f"{also}.0.1" and promised_next.after in (long_attempt, promised.attempt)
    assert [attempt.number for attempt in world.store.attempts_of(third)] == [1]  # one attempt, no requeue


def test_a_stranded_promise_stays_when_a_job_before_it_waits_for_the_room(world: World) -> None:  # noqa: F811
    """The freed room goes in the planner's order: a job submitted since with a higher priority
    takes it, and the promise behind the long job stays."""
    long_attempt, short_attempt, promised, third = two_cpus_one_promise(world)
    (urgent,) = world.submit(priority=10)
    world.exited(short_attempt)
    before = len(world.sent)
    (given,) = world.schedule()
    assert given.attempt == f"{urgent}.0.1" and given.after is None
    assert not [s for s in world.sent[before:] if isinstance(s.message, SignalAttempt)]


def test_a_promise_stays_when_the_room_freed_beside_it_goes_to_an_array_task_its_limit_now_lets_start(
        world: World) -> None:  # noqa: F811
    """An array of 6 at most 2 at once, and a job behind it, on two CPUs: two tasks run and the
    job is promised behind one of them (the array's others wait at its %2). When the other task
    ends, the array's next task, which ranks before the job, takes its room; the promise stays.
    (It was taken back for that room, then promised again behind the task that took it: three
    times in a row before the job ran.)"""
    world.options = PROMISING
    world.connect(cpus=2)
    (array,) = world.submit(array="1-6%2")
    (job,) = world.submit()
    starts = world.schedule()
    running = [s.attempt for s in starts if s.after is None]
    (promised,) = [s for s in starts if s.after is not None]
    assert len(running) == 2 and promised.attempt == f"{job}.0.1"
    for attempt in running:
        world.started(attempt)
    other = next(attempt for attempt in running if attempt != promised.after)
    world.exited(other)
    before = len(world.sent)
    (next_task,) = world.schedule()
    assert next_task.attempt.startswith(f"{array}.") and next_task.after is None
    assert not [s for s in world.sent[before:] if isinstance(s.message, SignalAttempt)]
    assert "promise_taken_back" not in world.event_kinds(job)


def test_a_stranded_promise_stays_when_the_end_that_freed_the_room_lets_a_job_before_it_start(
        world: World) -> None:  # noqa: F811
    """The pass judges a stranded promise by what it finds could start now, whatever held a job
    before it back until then: a job submitted before the promised one waits for the short
    job (afterok); the short job's end frees a CPU beside the promise and meets the dependency
    at once. The job before it takes that CPU in the same pass, and the promise stays (it was
    started in place there, and the job before it waited for the long job's end)."""
    world.options = PROMISING
    world.connect(cpus=2)
    long, short = world.submit(script="sleep 3600\n") + world.submit()
    (dependent,) = world.submit(after_ok=[short])
    (third,) = world.submit()
    starts = world.schedule()
    long_attempt, short_attempt = (s.attempt for s in starts if s.after is None)
    (promised,) = [s for s in starts if s.after is not None]
    assert promised.attempt == f"{third}.0.1" and promised.after == long_attempt
    world.started(long_attempt)
    world.started(short_attempt)
    world.exited(short_attempt)
    before = len(world.sent)
    (given,) = world.schedule()
    assert given.attempt == f"{dependent}.0.1" and given.after is None
    assert not [s for s in world.sent[before:] if isinstance(s.message, (SignalAttempt, StartPromisedNow))]
    assert "promise_started_in_place" not in world.event_kinds(third)
    assert "promise_taken_back" not in world.event_kinds(third)


def test_nothing_is_taken_back_while_no_room_is_free(world: World) -> None:  # noqa: F811
    long_attempt, short_attempt, promised, third = two_cpus_one_promise(world)
    before = len(world.sent)
    world.schedule()
    assert not [s for s in world.sent[before:] if isinstance(s.message, SignalAttempt)]


def test_no_order_of_its_own_is_built_for_a_stranded_promise(world: World, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """Weighing every owner's fair share for the planner's order is dear: a pass with promises
    outstanding builds no order of its own for them, stranded or not; a stranded promise (room
    it fits is free beside it) is judged in the planner's own walk."""
    built: list[int] = []
    policy_of = dispatch.policy_of

    def counted(*args: Any) -> Any:
        built.append(1)
        return policy_of(*args)

    monkeypatch.setattr(dispatch, "policy_of", counted)
    long_attempt, short_attempt, promised, third = two_cpus_one_promise(world)
    assert world.state.followers  # each pass looks for stranded promises
    for _ in range(3):
        world.schedule()
    assert built == []  # no room free beside the promise: no candidate, no order built
    world.exited(short_attempt)
    world.schedule()
    assert built == []  # the short job's room is free: the promise is stranded, judged in the planner's walk
    assert "promise_started_in_place" in world.event_kinds(third)


def test_nothing_is_promised_on_a_node_back_with_fewer_cpus_than_its_attempts_hold(world: World) -> None:  # noqa: F811
    """A node back with one CPU while two attempts run there: the room the first to end gives
    back pays the overdraft, so no task is promised behind either (it would start at once on
    that room, two jobs on one CPU still). Once the node holds no more than it has, the attempt
    left runs on CPU 1, which the node no longer offers: no task is promised its room either (its
    node would refuse the order on that CPU); a task waits for it to end, and starts on CPU 0;
    once the node's attempts are on CPUs it offers, a task is promised behind them again."""
    world.options = PROMISING
    world.connect(cpus=2)
    world.submit(script="sleep 1\n")
    world.submit(script="sleep 1\n")
    first, second = world.schedule()
    world.started(first.attempt)
    world.started(second.attempt)
    world.connect(cpus=1, known=[KnownAttempt(first.attempt, True), KnownAttempt(second.attempt, True)])
    assert world.state.nodes["n1"].overdrawn.cpus == 1
    (later,) = world.submit()
    assert world.schedule() == []
    world.exited(first.attempt)
    assert world.state.nodes["n1"].overdrawn.cpus == 0
    assert world.schedule() == [] and not world.state.followers
    world.exited(second.attempt)
    (started,) = world.schedule()
    assert (started.attempt, started.after, started.config["cpu_ids"]) == (f"{later}.0.1", None, [0])
    world.started(started.attempt)
    (next_one,) = world.submit()
    (promised,) = world.schedule()
    assert promised.attempt == f"{next_one}.0.1" and promised.after == started.attempt


def test_a_promise_is_not_taken_back_for_an_array_task_of_the_same_priority_its_limit_now_lets_start(
        world: World) -> None:  # noqa: F811
    """An array of 6 at most 2 at once (64 MiB each) and two jobs of no memory behind it, on two
    CPUs: two tasks run and each job is promised behind one (the array's others wait at its %2).
    The first task ends: its follower starts there, the %2 lifts, and the array's next task,
    which ranks first only by its submission, waits for room. It fits only behind the other
    task, where the second job holds a promise: that promise stays (it was taken back for the
    array's task, a round trip and a requeued row in drover history for a job that never ran),
    and the array's task is promised the next room in turn."""
    world.options = PROMISING
    world.connect(cpus=2)
    (array,) = world.submit(array="1-6%2", memory_mib=64)
    first_job, second_job = world.submit() + world.submit()
    starts = world.schedule()
    running = sorted(s.attempt for s in starts if s.after is None)
    promised = {s.attempt: s.after for s in starts if s.after is not None}
    assert len(running) == 2 and set(promised) == {f"{first_job}.0.1", f"{second_job}.0.1"}
    for attempt in running:
        world.started(attempt)
    freed = promised[f"{first_job}.0.1"]
    world.started(f"{first_job}.0.1")  # its node starts it the moment the task it follows is gone
    world.exited(freed)
    before = len(world.sent)
    world.schedule()
    assert not [s for s in world.sent[before:] if isinstance(s.message, SignalAttempt)]
    assert "promise_taken_back" not in world.event_kinds(second_job)


def test_the_metrics_count_a_promised_attempt_as_started_when_its_node_starts_it_and_a_taken_back_one_never(
        world: World) -> None:  # noqa: F811
    """drover_attempts_started_total counts what started: a promised attempt when its node
    starts it, not when it is promised (a job shown pending must not be counted as started),
    and a promise taken back before it started is neither started nor ended."""
    running, promised, jobs = one_cpu_busy(world)
    tallies = world.state.tallies
    assert tallies.attempts_started == 1  # the running one; the promised one waits
    world.act("cancel", str(jobs[1]))  # taken back before it started
    world.exited(promised.attempt, {"exit_code": None, "signal": None, "failure": None, "timed_out": False,
                                    "terminated": True, "out_of_memory": False})
    assert tallies.attempts_started == 1 and sum(tallies.attempts_ended.values()) == 0
    (again,) = world.schedule()  # the next job is promised behind the running one
    assert again.after == running
    world.started(again.attempt)  # its node starts it as the first one ends
    world.exited(running)
    assert tallies.attempts_started == 2 and tallies.attempts_ended == {"completed": 1}


def balance(world: World) -> tuple[int, int]:  # noqa: F811
    """The attempts counted started and ended so far."""
    tallies = world.state.tallies
    return tallies.attempts_started, sum(tallies.attempts_ended.values())


def test_a_promised_attempt_that_fails_to_set_up_is_counted_started_and_ended(world: World) -> None:  # noqa: F811
    """The attempt it follows ends, its node begins it, and its set-up fails before the job
    starts (no Started report): it was started as a dispatched attempt that fails so is, and
    counts so (it was counted neither, its failure nowhere in the metrics)."""
    running, promised, jobs = one_cpu_busy(world)
    world.exited(running)
    assert balance(world) == (1, 1)
    world.exited(promised.attempt, {"exit_code": None, "signal": None, "failure": "the prolog failed",
                                    "timed_out": False, "terminated": False, "out_of_memory": False})
    assert balance(world) == (2, 2) and world.state.tallies.attempts_ended == {"completed": 1, "failed": 1}


def test_a_promise_lost_with_its_node_is_counted_started_and_ended(world: World) -> None:  # noqa: F811
    from drover.controller.handlers.node_reports import on_node_disconnected, on_nodes_lost

    running, promised, jobs = one_cpu_busy(world)
    world.run(on_node_disconnected(world.state, "n1", world.now))
    world.now += 1000
    world.run(on_nodes_lost(world.state, world.now, 60.0))
    assert balance(world) == (2, 2)  # the running one and the promised one, each requeued or failed


def history_exit_status(world: World, attempt: str) -> int | None:  # noqa: F811
    """What drover history shows as the ended attempt's exit status (None: it never ran a job)."""
    from drover.controller.reads.history_views import history_row

    reader = world.store.reader()
    try:
        (row,) = [history_row(record) for record in reader.history(None, 100, None)
                  if f"{record.job_id}.{record.index}.{record.attempt}" == attempt]
    finally:
        reader.close()
    return row.exit_status


def test_a_promise_taken_back_then_lost_with_its_node_is_counted_as_history_shows_it(world: World) -> None:  # noqa: F811
    """Cancelled while promised, its node lost before it said how the promise ended: the attempt
    ends as a failure (its node lost), which drover history and qacct show with an exit status
    of its own. The metrics count it started and ended as they do (it was counted neither: the
    stop alone decided it, whatever ended it)."""
    from drover.controller.handlers.node_reports import on_node_disconnected, on_nodes_lost

    running, promised, jobs = one_cpu_busy(world)
    world.act("cancel", str(jobs[1]))  # taken back; its node never reports it
    world.run(on_node_disconnected(world.state, "n1", world.now))
    world.now += 1000
    world.run(on_nodes_lost(world.state, world.now, 60.0))
    assert history_exit_status(world, promised.attempt) is not None
    assert balance(world) == (2, 2)  # the running one and the promised one


def test_a_promise_taken_back_whose_set_up_failed_is_counted_as_history_shows_it(world: World) -> None:  # noqa: F811
    """Cancelled as its node began it (the attempt it followed had just ended), its set-up
    failed before the job started: a failed attempt in drover history, started and ended in the
    metrics. A promise taken back that ended with nothing gone wrong is neither, in both."""
    running, promised, jobs = one_cpu_busy(world)
    world.act("cancel", str(jobs[1]))
    world.exited(promised.attempt, {"exit_code": None, "signal": None, "failure": "the prolog failed",
                                    "timed_out": False, "terminated": False, "out_of_memory": False})
    assert history_exit_status(world, promised.attempt) is not None
    assert balance(world) == (2, 1)  # the running one started; the promised one started and ended
    (again,) = world.schedule()  # the next job, promised behind the running one, taken back cleanly
    world.act("cancel", str(jobs[2]))
    world.exited(again.attempt, {"exit_code": None, "signal": None, "failure": None, "timed_out": False,
                                 "terminated": True, "out_of_memory": False})
    assert history_exit_status(world, again.attempt) is None
    assert balance(world) == (2, 1)
