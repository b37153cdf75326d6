"""A node that says hello with fewer CPUs than before (its config changed across a restart), while
the controller holds attempts dispatched there that the node does not know (their orders were
lost with the node daemon): an order on a CPU the node no longer offers is not sent again (the
node would refuse it, execd/attempts.py). The attempt ends there, never started, and its task
waits again; a cancel or a hold asked for meanwhile is decided as such; an attempt that started
runs on, pinned where it was. World checks the working set's invariants after every step."""

from __future__ import annotations

from tests.helpers.controller_world import WITHOUT_PROMISES, World, world  # noqa: F401  (a fixture)

from drover.config_schema import SchedulerSection
from drover.controller.handlers.dispatch import OrderOptions
from drover.core.accounting import never_ran
from drover.protocol.node_channel import KnownAttempt, SignalAttempt, StartAttempt

PROMISING = OrderOptions(1.0, scheduler=SchedulerSection(promises=True))
STOPPED = {"exit_code": None, "signal": None, "failure": None, "timed_out": False, "terminated": True,
           "out_of_memory": False}


def state_of(world: World, job: int) -> str:  # noqa: F811
    """As the store has it (a job that ended has left the working set)."""
    stored = world.store.load_job(job)
    assert stored is not None
    return stored.tasks[0].state.value


def orders_for(world: World, since: int, job: int) -> list[object]:  # noqa: F811
    """What was sent to the node since `since` about job `job`'s attempts."""
    return [s.message for s in world.sent[since:] if isinstance(s.message, (StartAttempt, SignalAttempt))
            and s.message.attempt.startswith(f"{job}.")]


def requeue_reasons(world: World, job: int) -> list[str]:  # noqa: F811
    return [event.detail.get("reason", "") for _, event in world.store.events_of(job, 0, 1000)
            if event.kind == "requeued"]


def test_an_unstarted_attempt_on_cpus_the_node_came_back_without_ends_and_its_task_waits_again(
        world: World) -> None:  # noqa: F811
    """Four CPUs: `a` and `b` run on CPUs 0 and 1, `c` and `d` are dispatched to CPUs 2 and 3 and
    their orders lost; `d` is cancelled. The node comes back with two CPUs: `c` ends, never
    started, and waits again; `d` is cancelled; `b` runs on; nothing is sent for `c` or `d`.
    Once `a` ends, `c` starts again on the CPU it freed, as a new attempt."""
    world.options = WITHOUT_PROMISES
    world.connect(cpus=4)
    a, b, c, d = world.submit() + world.submit() + world.submit() + world.submit()
    orders = {order.attempt: order.config["cpu_ids"] for order in world.schedule()}
    assert orders == {f"{a}.0.1": [0], f"{b}.0.1": [1], f"{c}.0.1": [2], f"{d}.0.1": [3]}
    world.started(f"{a}.0.1")
    world.started(f"{b}.0.1")
    world.act("cancel", str(d))
    assert world.state.jobs[d].tasks[0].cancel_requested

    before = len(world.sent)
    world.connect(cpus=2, known=[KnownAttempt(f"{a}.0.1", True), KnownAttempt(f"{b}.0.1", True)])
    assert orders_for(world, before, c) == [] and orders_for(world, before, d) == []
    assert (state_of(world, a), state_of(world, b), state_of(world, c), state_of(world, d)) == (
        "running", "running", "pending", "cancelled")
    (ended,) = world.store.attempts_of(c)
    assert ended.exit is not None and ended.ended_at is not None and ended.started_at is None
    assert never_ran(ended.started_at, ended.exit["exit_code"], ended.exit["signal"], ended.exit["failure"])
    assert requeue_reasons(world, c) == ["node n1 came back offering 2 CPUs, without CPU 2 of the "
                                         "attempt's: it never started"]
    assert not world.state.jobs[c].tasks[0].requeue_requested  # nothing of the requeue is left asked for
    assert world.state.nodes["n1"].state.value == "up"  # the node did nothing wrong
    assert world.state.nodes["n1"].used_cpu_ids == {0, 1}

    assert world.schedule() == []  # no room: both CPUs run `a` and `b`
    world.exited(f"{a}.0.1")
    (again,) = world.schedule()
    assert (again.attempt, again.config["cpu_ids"]) == (f"{c}.0.2", [0])


def test_a_promise_the_node_does_not_hold_on_cpus_it_came_back_without_ends_unstarted(
        world: World) -> None:  # noqa: F811
    """Two CPUs: a long job on each, a third promised behind the one on CPU 1, which ends first
    (its time limit is shorter); the node comes back with one CPU, without the promise (its order
    was lost). The promise ends as one taken back: counted neither started nor ended, its task
    waiting again; the job on CPU 1 runs on."""
    world.options = PROMISING
    world.connect(cpus=2)
    first, second, third = (world.submit(time_limit_s=7200) + world.submit(time_limit_s=600)
                            + world.submit(time_limit_s=60))
    starts = world.schedule()
    (promised,) = [s for s in starts if s.after is not None]
    assert promised.attempt == f"{third}.0.1" and promised.config["cpu_ids"] == [1]
    assert promised.after == f"{second}.0.1"
    world.started(f"{first}.0.1")
    world.started(f"{second}.0.1")
    tallies = world.state.tallies
    counted = tallies.attempts_started, sum(tallies.attempts_ended.values())

    before = len(world.sent)
    world.connect(cpus=1, known=[KnownAttempt(f"{first}.0.1", True), KnownAttempt(f"{second}.0.1", True)])
    assert orders_for(world, before, third) == []
    assert state_of(world, third) == "pending" and state_of(world, second) == "running"
    assert not world.state.followers
    assert (tallies.attempts_started, sum(tallies.attempts_ended.values())) == counted
    (requeued,) = [event for _, event in world.store.events_of(third, 0, 1000) if event.kind == "requeued"]
    assert requeued.detail.get("promise_unstarted") is True


def test_a_held_task_on_cpus_the_node_came_back_without_waits_held(world: World) -> None:  # noqa: F811
    world.options = WITHOUT_PROMISES
    world.connect(cpus=2)
    a, b = world.submit() + world.submit()
    world.schedule()
    world.started(f"{a}.0.1")
    world.act("hold", str(b))
    before = len(world.sent)
    world.connect(cpus=1, known=[KnownAttempt(f"{a}.0.1", True)])
    assert orders_for(world, before, b) == []
    assert state_of(world, b) == "held"


def test_a_promise_the_node_holds_on_cpus_it_came_back_without_is_taken_back(world: World) -> None:  # noqa: F811
    """The node daemon kept the promise in its spool across its restart: the controller takes it
    back (its node would not start it on CPU 1), and the task waits again once the node says it
    ended, stopped before it started: counted neither started nor ended."""
    world.options = PROMISING
    world.connect(cpus=2)
    first, second, third = (world.submit(time_limit_s=7200) + world.submit(time_limit_s=600)
                            + world.submit(time_limit_s=60))
    (promised,) = [s for s in world.schedule() if s.after is not None]
    assert (promised.attempt, promised.after, promised.config["cpu_ids"]) == (f"{third}.0.1", f"{second}.0.1", [1])
    world.started(f"{first}.0.1")
    world.started(f"{second}.0.1")
    tallies = world.state.tallies
    counted = tallies.attempts_started, sum(tallies.attempts_ended.values())

    before = len(world.sent)
    world.connect(cpus=1, known=[KnownAttempt(f"{first}.0.1", True), KnownAttempt(f"{second}.0.1", True),
                                 KnownAttempt(f"{third}.0.1", True, promised=True)])
    assert orders_for(world, before, third) == [SignalAttempt(f"{third}.0.1", "terminate", "requeue")]
    (taken_back,) = [event for _, event in world.store.events_of(third, 0, 1000) if event.kind == "promise_taken_back"]
    assert taken_back.detail["why"].startswith("node n1 came back offering 1 CPU, without CPU 1 of the attempt's")
    assert state_of(world, third) == "dispatched"  # until its node says it ended

    world.exited(f"{third}.0.1", STOPPED)
    assert state_of(world, third) == "pending" and state_of(world, second) == "running"
    assert (tallies.attempts_started, sum(tallies.attempts_ended.values())) == counted
    assert world.state.nodes["n1"].state.value == "up"


def test_an_order_on_cpus_the_node_still_has_is_sent_again(world: World) -> None:  # noqa: F811
    """What the hello does for an attempt on CPUs the node still offers is as before: its lost
    order is sent again; the attempt that started on a CPU the node no longer offers runs on."""
    world.options = WITHOUT_PROMISES
    world.connect(cpus=2)
    a, b = world.submit() + world.submit()
    world.schedule()
    world.started(f"{b}.0.1")
    before = len(world.sent)
    world.connect(cpus=1, known=[KnownAttempt(f"{b}.0.1", True)])
    (resent,) = orders_for(world, before, a)
    assert isinstance(resent, StartAttempt) and resent.config["cpu_ids"] == [0]
    assert orders_for(world, before, b) == [] and state_of(world, b) == "running"


def test_nothing_is_promised_the_cpus_the_node_came_back_without(world: World) -> None:  # noqa: F811
    """Four CPUs, four jobs; the two on CPUs 0 and 1 end, and the node comes back with two CPUs:
    the two jobs left on CPUs 2 and 3 hold as much as it offers. A job submitted then is not
    promised the room of either (its node would refuse CPU 2 or 3): it waits, and starts on CPU 0
    once one of them ends."""
    world.options = PROMISING
    world.connect(cpus=4)
    jobs = world.submit() + world.submit() + world.submit() + world.submit()
    assert [order.config["cpu_ids"] for order in world.schedule()] == [[0], [1], [2], [3]]
    for job in jobs:
        world.started(f"{job}.0.1")
    world.exited(f"{jobs[0]}.0.1")
    world.exited(f"{jobs[1]}.0.1")
    world.connect(cpus=2, known=[KnownAttempt(f"{job}.0.1", True) for job in jobs[2:]])
    (waiting,) = world.submit()
    assert world.schedule() == [] and not world.state.followers
    world.exited(f"{jobs[2]}.0.1")
    (start,) = world.schedule()
    assert (start.attempt, start.after, start.config["cpu_ids"]) == (f"{waiting}.0.1", None, [0])
