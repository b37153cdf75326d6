"""A stranded promise started in place (controller/handlers/promises.py): room it fits is freed
beside it on its node while the attempt it follows runs on, so its node is told to start it there
now (StartPromisedNow), as the same attempt. The room is kept for it until its node says it
started; whichever way the node's reports, a cancel, a reload or a reconnect fall, nothing runs
twice, nothing is lost and no CPU is counted twice (World checks the working set's invariants
after every step)."""

from __future__ import annotations

from tests.helpers.controller_world import World, world  # noqa: F401  (a fixture)

from drover.config_schema import SchedulerSection
from drover.controller.handlers import queues
from drover.controller.handlers.dispatch import OrderOptions
from drover.controller.handlers.node_reports import on_reports
from drover.protocol.node_channel import (
    KnownAttempt,
    SignalAttempt,
    StartAttempt,
    Started,
    StartPromisedNow,
)

PROMISING = OrderOptions(1.0, scheduler=SchedulerSection(promises=True))
STOPPED = {"exit_code": None, "signal": None, "failure": None, "timed_out": False, "terminated": True,
           "out_of_memory": False}


def told_to_start_in_place(world: World) -> tuple[str, str, StartAttempt, int]:  # noqa: F811
    """Two CPUs: a long job and a short one run, a third is promised behind the long one; the
    short one ends, and the third's node is told to start it in place on the short one's CPU.
    Returns the long and short attempts, the promise, the third job."""
    world.options = PROMISING
    world.connect(cpus=2)
    long, short, third = world.submit(script="sleep 3600\n") + world.submit() + world.submit()
    starts = world.schedule()
    long_attempt, short_attempt = (s.attempt for s in starts if s.after is None)
    (promised,) = [s for s in starts if s.after is not None]
    assert promised.after == long_attempt
    world.started(long_attempt)
    world.started(short_attempt)
    world.exited(short_attempt)
    before = len(world.sent)
    assert world.schedule() == []
    moves = [s.message for s in world.sent[before:] if isinstance(s.message, StartPromisedNow)]
    assert [(m.attempt, m.cpu_ids) for m in moves] == [(promised.attempt, [1])]
    return long_attempt, short_attempt, promised, third


def started(world: World, attempt: str, moved: bool) -> None:  # noqa: F811
    world.run(on_reports(world.state, "n1", [Started(attempt, 5, world.now, moved=moved)], world.now))


def test_the_room_is_kept_for_the_move_until_its_node_answers(world: World) -> None:  # noqa: F811
    long_attempt, short_attempt, promised, third = told_to_start_in_place(world)
    (other,) = world.submit()
    assert [s.attempt for s in world.schedule() if s.after is None] == []  # CPU 1 is kept, not given
    attempt = world.state.attempt_by_name(promised.attempt)
    assert attempt is not None and attempt.moving_to == (1,)
    assert world.store.attempts_of(third)[0].moving_to == (1,)  # stored: a controller taking over keeps it
    started(world, promised.attempt, moved=True)
    assert world.state.nodes["n1"].used_cpu_ids == {0, 1}
    assert world.state.nodes["n1"].holders == {(third - 2, 0, 1), (third, 0, 1)}
    assert world.store.attempts_of(third)[0].moving_to is None


def test_the_end_of_the_one_it_followed_handled_first_gives_that_room_back(world: World) -> None:  # noqa: F811
    """The long job ends between the move's start on the node and its started hint: the long
    job's end is handled first, so the promise takes its room as a promise does; then the node
    says it started in place, and it gives that room back for the one it was given."""
    long_attempt, short_attempt, promised, third = told_to_start_in_place(world)
    world.exited(long_attempt)
    node = world.state.nodes["n1"]
    assert node.holders == {(third, 0, 1)} and node.used_cpu_ids == {0}
    started(world, promised.attempt, moved=True)
    assert node.holders == {(third, 0, 1)} and node.used_cpu_ids == {1}
    attempt = world.state.attempt_by_name(promised.attempt)
    assert attempt is not None and attempt.cpu_ids == (1,) and attempt.after is None


def test_a_promise_its_node_started_before_the_order_came_lets_the_kept_room_go(world: World) -> None:  # noqa: F811
    """The long job ended on the node before the order came: the node started the promise as
    promised, on the long job's CPU, and ignores the order. Its Started says so: the CPU kept
    for the move is let go, and the promise takes the long job's room when its end comes."""
    long_attempt, short_attempt, promised, third = told_to_start_in_place(world)
    started(world, promised.attempt, moved=False)
    attempt = world.state.attempt_by_name(promised.attempt)
    assert attempt is not None and attempt.moving_to is None and attempt.cpu_ids == (0,)
    assert not world.state.moving
    world.exited(long_attempt)
    assert world.state.nodes["n1"].used_cpu_ids == {0}
    (next_one,) = world.submit()
    (given,) = world.schedule()
    assert given.attempt == f"{next_one}.0.1" and given.after is None  # CPU 1 is free again


def test_a_cancel_while_the_move_is_under_way_lets_the_kept_room_go(world: World) -> None:  # noqa: F811
    long_attempt, short_attempt, promised, third = told_to_start_in_place(world)
    world.act("cancel", str(third))
    stops = [s.message for s in world.sent if isinstance(s.message, SignalAttempt)]
    assert [(s.attempt, s.why) for s in stops] == [(promised.attempt, "cancel")]
    world.exited(promised.attempt, STOPPED)
    assert world.state.ended_state(third, world.store) == "cancelled"
    assert not world.state.moving and world.state.nodes["n1"].used_cpu_ids == {0}


def test_a_move_under_way_is_not_taken_back_for_a_job_that_outranks_it(world: World) -> None:  # noqa: F811
    """Told to start in place, the promise may have started on its node already: a job submitted
    since with a higher priority does not take it back (it waits for room as any job would)."""
    long_attempt, short_attempt, promised, third = told_to_start_in_place(world)
    (urgent,) = world.submit(priority=10)
    before = len(world.sent)
    world.schedule()
    assert not [s for s in world.sent[before:] if isinstance(s.message, SignalAttempt)]


def test_a_reloaded_controller_keeps_the_room_and_tells_the_node_again(world: World) -> None:  # noqa: F811
    """A failover while the move is under way: the new controller keeps the CPU from the stored
    attempt, and the node's hello, which says the attempt is promised still, brings the order again."""
    long_attempt, short_attempt, promised, third = told_to_start_in_place(world)
    world.reload()
    assert world.state.moving == {(third, 0, 1)}
    (other,) = world.submit()
    assert [s.attempt for s in world.schedule() if s.after is None] == []  # CPU 1 is still kept
    before = len(world.sent)
    world.connect(known=[KnownAttempt(long_attempt, True), KnownAttempt(promised.attempt, True, promised=True)])
    again = [s.message for s in world.sent[before:] if isinstance(s.message, StartPromisedNow)]
    assert again == [StartPromisedNow(promised.attempt, [1])]
    started(world, promised.attempt, moved=True)
    assert world.state.nodes["n1"].used_cpu_ids == {0, 1}


def test_a_hello_that_does_not_name_the_promise_brings_its_order_then_the_move(world: World) -> None:  # noqa: F811
    """The promise's order never reached the node (lost with the channel): its hello names only
    the attempt it follows. The order comes again, then the move, in that order: the node holds
    the promise before it is told to start it in place."""
    long_attempt, short_attempt, promised, third = told_to_start_in_place(world)
    before = len(world.sent)
    world.connect(known=[KnownAttempt(long_attempt, True)])
    orders = [s.message for s in world.sent[before:]
              if isinstance(s.message, (StartAttempt, StartPromisedNow, SignalAttempt))]
    assert [type(order) for order in orders] == [StartAttempt, StartPromisedNow]
    order, move = orders
    assert isinstance(order, StartAttempt) and (order.attempt, order.after) == (promised.attempt, long_attempt)
    assert move == StartPromisedNow(promised.attempt, [1])
    started(world, promised.attempt, moved=True)
    assert world.state.nodes["n1"].used_cpu_ids == {0, 1} and not world.state.moving


def test_a_hello_that_says_the_promise_started_in_place_counts_it_there(world: World) -> None:  # noqa: F811
    """The node started it in place and its Started report was lost with the channel: its hello
    says it runs, moved, and the controller counts it on its new CPU."""
    long_attempt, short_attempt, promised, third = told_to_start_in_place(world)
    world.connect(known=[KnownAttempt(long_attempt, True), KnownAttempt(promised.attempt, True, moved=True)])
    attempt = world.state.attempt_by_name(promised.attempt)
    assert attempt is not None and attempt.cpu_ids == (1,) and attempt.started_at is not None
    assert world.state.jobs[third].tasks[0].state.value == "running"
    assert not world.state.followers and world.state.nodes["n1"].used_cpu_ids == {0, 1}


def test_a_node_lost_during_the_move_loses_both_and_keeps_nothing(world: World) -> None:  # noqa: F811
    from drover.controller.handlers.node_reports import on_node_disconnected, on_nodes_lost

    long_attempt, short_attempt, promised, third = told_to_start_in_place(world)
    world.run(on_node_disconnected(world.state, "n1", world.now))
    world.now += 1000
    world.run(on_nodes_lost(world.state, world.now, 60.0))
    assert not world.state.moving and world.state.nodes["n1"].used_cpu_ids == set()


def test_a_node_of_an_earlier_version_has_its_stranded_promise_taken_back(world: World) -> None:  # noqa: F811
    """A node daemon whose hello does not say it takes StartPromisedNow would refuse the frame
    that carries one: its stranded promise is taken back as before, the room kept for its task,
    which starts there as a new attempt once the node has ended the promised one."""
    from drover.controller.handlers.node_reports import on_node_connected
    from drover.protocol.node_channel import Hello

    world.options = PROMISING
    world.run(on_node_connected(world.state, Hello("n1", 2, 4096), world.now, world.options, world.store))
    long, short, third = world.submit(script="sleep 3600\n") + world.submit() + world.submit()
    starts = world.schedule()
    long_attempt, short_attempt = (s.attempt for s in starts if s.after is None)
    (promised,) = [s for s in starts if s.after is not None]
    world.started(long_attempt)
    world.started(short_attempt)
    world.exited(short_attempt)
    before = len(world.sent)
    assert world.schedule() == []
    orders = [s.message for s in world.sent[before:] if isinstance(s.message, (SignalAttempt, StartPromisedNow))]
    assert orders == [SignalAttempt(promised.attempt, "terminate", "requeue")]
    world.exited(promised.attempt, STOPPED)
    (again,) = world.schedule()
    assert (again.attempt, again.after) == (f"{third}.0.2", None)


def test_a_hello_after_a_cancel_under_way_stops_the_promise_and_does_not_move_it(world: World) -> None:  # noqa: F811
    """Cancelled while the move was under way, and the stop lost with the channel: the node's
    hello, which says it still holds the promise, brings the stop again, not the move (a move
    first would start a shepherd, and perhaps the job, for a task that is cancelled)."""
    long_attempt, short_attempt, promised, third = told_to_start_in_place(world)
    world.act("cancel", str(third))
    before = len(world.sent)
    world.connect(known=[KnownAttempt(long_attempt, True), KnownAttempt(promised.attempt, True, promised=True)])
    again = [s.message for s in world.sent[before:] if isinstance(s.message, (SignalAttempt, StartPromisedNow))]
    assert again == [SignalAttempt(promised.attempt, "terminate", "cancel")]


def test_a_hello_from_a_node_gone_back_to_an_earlier_version_does_not_bring_the_move_again(
        world: World) -> None:  # noqa: F811
    """A node whose hello no longer says it takes StartPromisedNow would refuse every frame that
    carries one, and reconnect, and be told again: it is not told; the promise starts when the
    attempt it follows ends, its room kept until then."""
    from drover.controller.handlers.node_reports import on_node_connected
    from drover.protocol.node_channel import Hello

    long_attempt, short_attempt, promised, third = told_to_start_in_place(world)
    before = len(world.sent)
    known = [KnownAttempt(long_attempt, True), KnownAttempt(promised.attempt, True, promised=True)]
    world.run(on_node_connected(world.state, Hello("n1", 2, 4096, known), world.now, world.options, world.store))
    assert not [s for s in world.sent[before:] if isinstance(s.message, StartPromisedNow)]


def test_a_promise_a_hello_says_started_is_counted_as_started_then(world: World) -> None:  # noqa: F811
    """Its Started report lost with the channel, a promised attempt the node's hello says runs
    is counted by drover_attempts_started_total then, as its report would have."""
    long_attempt, short_attempt, promised, third = told_to_start_in_place(world)
    counted = world.state.tallies.attempts_started
    world.connect(known=[KnownAttempt(long_attempt, True), KnownAttempt(promised.attempt, True, moved=True)])
    assert world.state.tallies.attempts_started == counted + 1


def test_a_node_back_with_fewer_cpus_than_the_move_names_has_the_move_let_go(world: World) -> None:  # noqa: F811
    """Three CPUs: a long job, a job `a`, a job that ends, and a fourth promised behind the long
    one, told to start in place on the ended one's CPU 2. The node restarts with two CPUs before
    the order reaches it: it would refuse the order at each hello, and CPU 2 would be kept, for
    nothing, until the long job ends. The hello lets the move go (the promise stays a promise);
    when `a` ends, the promise starts in place on CPU 1, which the node has."""
    world.options = PROMISING
    world.connect(cpus=3)
    long, a, b, fourth = world.submit(script="sleep 3600\n") + world.submit() + world.submit() + world.submit()
    starts = world.schedule()
    running = {s.attempt: s for s in starts if s.after is None}
    (promised,) = [s for s in starts if s.after is not None]
    long_attempt, a_attempt, b_attempt = (f"{job}.0.1" for job in (long, a, b))
    assert set(running) == {long_attempt, a_attempt, b_attempt} and promised.after == long_attempt
    for name in running:
        world.started(name)
    world.exited(b_attempt)
    before = len(world.sent)
    assert world.schedule() == []
    assert [s.message for s in world.sent[before:] if isinstance(s.message, StartPromisedNow)] == [
        StartPromisedNow(promised.attempt, [2])]

    before = len(world.sent)
    world.connect(cpus=2, known=[KnownAttempt(long_attempt, True), KnownAttempt(a_attempt, True),
                                 KnownAttempt(promised.attempt, True, promised=True)])
    assert not [s for s in world.sent[before:] if isinstance(s.message, StartPromisedNow)]
    attempt = world.state.attempt_by_name(promised.attempt)
    assert attempt is not None and attempt.moving_to is None and attempt.after == long_attempt
    assert not world.state.moving and world.store.attempts_of(fourth)[0].moving_to is None
    assert world.state.followers.get((long, 0, 1)) == (fourth, 0, 1)  # a promise still

    world.exited(a_attempt)
    before = len(world.sent)
    assert world.schedule() == []
    assert [s.message for s in world.sent[before:] if isinstance(s.message, StartPromisedNow)] == [
        StartPromisedNow(promised.attempt, [1])]
    started(world, promised.attempt, moved=True)
    assert world.state.nodes["n1"].used_cpu_ids == {0, 1} and world.state.followers.get((long, 0, 1)) is None


def test_a_node_back_with_as_many_cpus_as_the_move_needs_is_told_again(world: World) -> None:  # noqa: F811
    """The move names CPU 1, and the node comes back with two CPUs: the move stays, told again."""
    long_attempt, short_attempt, promised, third = told_to_start_in_place(world)
    before = len(world.sent)
    world.connect(cpus=2, known=[KnownAttempt(long_attempt, True), KnownAttempt(promised.attempt, True, promised=True)])
    assert [s.message for s in world.sent[before:] if isinstance(s.message, StartPromisedNow)] == [
        StartPromisedNow(promised.attempt, [1])]
    assert world.state.moving == {(third, 0, 1)}


def test_a_promise_of_a_stopped_queue_is_not_started_in_place(world: World) -> None:  # noqa: F811
    """Its queue stopped while it waited: room freed beside it does not start it, as no job of
    that queue starts; started again, the queue lets the next pass move it."""
    world.options = PROMISING
    world.connect(cpus=2)
    world.submit(script="sleep 3600\n")
    world.submit()
    world.submit()
    starts = world.schedule()
    long_attempt, short_attempt = (s.attempt for s in starts if s.after is None)
    (promised,) = [s for s in starts if s.after is not None]
    world.started(long_attempt)
    world.started(short_attempt)
    world.run(queues.switch(world.state, {}, "default", "stop", "", "root", True, world.now))
    world.exited(short_attempt)
    before = len(world.sent)
    assert world.schedule() == []
    assert not [s for s in world.sent[before:] if isinstance(s.message, StartPromisedNow)]
    world.run(queues.switch(world.state, {}, "default", "start", "", "root", True, world.now))
    world.schedule()
    moves = [s.message for s in world.sent[before:] if isinstance(s.message, StartPromisedNow)]
    assert [(m.attempt, m.cpu_ids) for m in moves] == [(promised.attempt, [1])]
