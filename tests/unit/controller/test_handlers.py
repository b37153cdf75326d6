"""Controller handlers on a real (temporary) SQLite store, without sockets or processes."""

from __future__ import annotations

import pytest
from tests.helpers.controller_world import OK, WITHOUT_PROMISES, World

from drover.controller.handlers.node_reports import on_node_connected
from drover.controller.handlers.submit import submit
from drover.core.errors import BadRequest
from drover.core.queues import Queue, QueueRecord
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import (
    Ack,
    Hello,
    KnownAttempt,
    SignalAttempt,
    StartAttempt,
)


def test_submitted_job_is_dispatched_with_its_output_path_and_cpus(world: World) -> None:
    world.connect()
    (job,) = world.submit(name="hello", output="out-%x-%j.txt")
    (order,) = world.schedule()
    assert order.attempt == f"{job}.0.1"
    assert order.config["stdout"] == f"/tmp/out-hello-{job}.txt"
    assert order.config["cpu_ids"] == [0] and order.config["kill_grace_s"] == 1.0


def test_a_bad_submission_in_a_batch_stores_nothing(world: World) -> None:
    good = JobSubmission(script="true\n", workdir="/tmp")
    bad = JobSubmission(script="true\n", workdir="relative/dir")
    with pytest.raises(BadRequest, match="job 2 of the request: the working directory must be an absolute path"):
        submit(world.state, [good, bad], "alice", world.now, world.store)
    assert world.state.jobs == {} and world.store.load_working_set().jobs == {}


def test_a_repeated_exit_report_is_acknowledged_and_counted_once(world: World) -> None:
    world.connect()
    (job,) = world.submit()
    (order,) = world.schedule()
    world.started(order.attempt)
    first = world.exited(order.attempt)
    second = world.exited(order.attempt)
    assert Ack([order.attempt]) in first and Ack([order.attempt]) in second
    assert world.ended == [job]
    assert world.event_kinds(job).count("job_ended") == 1
    assert world.store.load_job(job).state.value == "completed"  # type: ignore[union-attr]


def test_a_late_report_from_an_attempt_the_task_moved_on_from_changes_nothing(world: World) -> None:
    world.connect()
    (job,) = world.submit()
    (first,) = world.schedule()
    world.exited(first.attempt, dict(OK, exit_code=99))  # requeue
    (second,) = world.schedule()
    assert second.attempt == f"{job}.0.2"
    world.exited(first.attempt, dict(OK, exit_code=0))  # the first attempt again, late
    assert world.state.jobs[job].tasks[0].state.value == "dispatched"
    world.exited(second.attempt)
    assert world.ended == [job]


def test_cancel_of_a_running_task_signals_it_and_the_exit_makes_it_cancelled(world: World) -> None:
    world.connect()
    (job,) = world.submit()
    (order,) = world.schedule()
    world.act("cancel", str(job))
    assert SignalAttempt(order.attempt, "terminate", "cancel") in [s.message for s in world.sent]
    assert world.state.jobs[job].tasks[0].state.value == "dispatched"  # a request, not a state
    world.exited(order.attempt, dict(OK, exit_code=None, signal=15, terminated=True))
    assert world.store.load_job(job).state.value == "cancelled"  # type: ignore[union-attr]


def test_an_action_on_another_users_job_is_refused_naming_the_owner_and_changes_nothing(world: World) -> None:
    (job,) = world.submit(hold=True)
    for action in ("cancel", "release", "hold"):
        (result,) = world.act(action, str(job), user="bob")
        assert not result.ok  # type: ignore[attr-defined]
        assert result.message == f"job {job} belongs to alice; bob cannot {action} it"  # type: ignore[attr-defined]
    assert world.store.load_job(job).fresh_state.value == "held"  # type: ignore[union-attr]


def test_another_users_ended_job_is_refused_as_theirs_before_saying_how_it_ended(world: World) -> None:
    (job,) = world.submit()
    world.act("cancel", str(job))
    assert job not in world.state.jobs  # ended, and out of the working set
    (theirs,) = world.act("cancel", str(job), user="bob")
    assert theirs.message == f"job {job} belongs to alice; bob cannot cancel it"  # type: ignore[attr-defined]
    (own,) = world.act("cancel", str(job))
    assert own.message == f"job {job} has already ended (cancelled)"  # type: ignore[attr-defined]


def test_cancel_of_one_never_dispatched_array_task_leaves_the_others_pending(world: World) -> None:
    (job,) = world.submit(array="1-5")
    (result,) = world.act("cancel", f"{job}.3")
    assert result.ok  # type: ignore[attr-defined]
    counts = world.state.jobs[job].task_counts()
    assert counts == {"cancelled": 1, "pending": 4}
    world.connect(cpus=8)
    started = sorted(int(order.attempt.split(".")[1]) for order in world.schedule())
    assert started == [1, 2, 4, 5]
    world.reload()
    assert world.state.jobs[job].task_counts() == {"cancelled": 1, "dispatched": 4}


def test_a_hundred_thousand_task_array_costs_one_row_until_tasks_start(world: World) -> None:
    world.options = WITHOUT_PROMISES  # the rows of the two that start, none of tasks promised behind them
    world.connect(cpus=2)
    (job,) = world.submit(array="1-100000")
    assert len(world.schedule()) == 2
    assert len(world.store.load_job(job).tasks) == 2  # type: ignore[union-attr]
    assert world.state.jobs[job].task_counts() == {"dispatched": 2, "pending": 99998}


def test_after_a_controller_restart_a_node_hello_resends_lost_orders_and_fails_lost_attempts(world: World) -> None:
    world.connect()
    a, b = world.submit(), world.submit()
    first, second = world.schedule()
    world.started(second.attempt, job_pid=1)
    world.reload()
    world.connect(known=[])  # the node knows neither attempt
    resent = [s.message for s in world.sent if isinstance(s.message, StartAttempt)]
    assert [order.attempt for order in resent] == [first.attempt]  # dispatched: the order was lost
    # running, and unknown to the node: lost, and requeued as a new attempt
    assert world.state.jobs[b[0]].tasks[0].state.value == "pending"
    (lost,) = world.store.attempts_of(b[0])
    assert lost.exit is not None and lost.exit.get("node_lost") and lost.exit["failure"] == "node n1 no longer knows the attempt"
    assert a[0] in world.state.jobs


def test_hold_and_release_of_a_whole_array(world: World) -> None:
    world.options = WITHOUT_PROMISES  # counts the released tasks that start, none promised behind them
    (job,) = world.submit(array="1-3", hold=True)
    assert world.state.jobs[job].task_counts() == {"held": 3}
    world.connect()
    assert world.schedule() == []
    (result,) = world.act("release", str(job))
    assert result.ok  # type: ignore[attr-defined]
    assert len(world.schedule()) == 2
    (again,) = world.act("release", str(job))
    assert not again.ok and "no held task" in again.message  # type: ignore[attr-defined]


STOPPED = dict(OK, exit_code=None, terminated=True, failure="stopped before the job started (a hold came during its prolog)")


def test_a_hold_while_the_prolog_runs_stops_the_attempt_and_the_task_waits_held_until_released(world: World) -> None:
    world.connect()
    (job,) = world.submit()
    (first,) = world.schedule()
    (result,) = world.act("hold", str(job))
    assert result.ok and "stopping before its job starts" in result.message  # type: ignore[attr-defined]
    assert SignalAttempt(first.attempt, "terminate", "hold") in [s.message for s in world.sent]
    task = world.state.jobs[job].tasks[0]
    assert task.state.value == "dispatched" and task.hold_requested  # a request, not a state
    (again,) = world.act("hold", str(job))
    assert not again.ok  # type: ignore[attr-defined]
    world.reload()  # the request is stored: a restarted controller tells the node again
    world.connect(known=[KnownAttempt(first.attempt, True)])
    assert SignalAttempt(first.attempt, "terminate", "hold") in [s.message for s in world.sent]
    world.exited(first.attempt, STOPPED)
    task = world.state.jobs[job].tasks[0]
    assert task.state.value == "held" and not task.hold_requested
    assert world.schedule() == []
    kinds = world.event_kinds(job)
    assert "hold_requested" in kinds and "held" in kinds and "failed" not in kinds
    (released,) = world.act("release", str(job))
    assert released.ok  # type: ignore[attr-defined]
    (second,) = world.schedule()
    assert second.attempt == f"{job}.0.2"
    world.started(second.attempt)
    world.exited(second.attempt)
    assert world.store.load_job(job).state.value == "completed"  # type: ignore[union-attr]


def test_a_running_task_cannot_be_held_and_a_cancel_wins_over_a_hold(world: World) -> None:
    world.connect()
    running, starting = world.submit(), world.submit()
    first, second = world.schedule()
    world.started(first.attempt)
    (refused,) = world.act("hold", str(running[0]))
    assert not refused.ok and refused.message == f"job {running[0]} has no pending task to hold"  # type: ignore[attr-defined]
    assert world.state.jobs[running[0]].tasks[0].state.value == "running"
    world.act("hold", str(starting[0]))
    world.act("cancel", str(starting[0]))
    assert SignalAttempt(second.attempt, "terminate", "cancel") in [s.message for s in world.sent]
    world.exited(second.attempt, STOPPED)
    assert world.store.load_job(starting[0]).state.value == "cancelled"  # type: ignore[union-attr]


def test_a_requeue_under_way_before_the_job_started_ends_held_if_held_meanwhile(world: World) -> None:
    world.connect()
    (job,) = world.submit()
    (first,) = world.schedule()
    world.act("requeue", str(job))
    sent = len(world.sent)
    (result,) = world.act("hold", str(job))
    assert result.ok and len(world.sent) == sent  # type: ignore[attr-defined]  # stopping already
    (requeue,) = world.act("requeue", str(job))
    assert not requeue.ok  # type: ignore[attr-defined]
    world.exited(first.attempt, STOPPED)
    assert world.state.jobs[job].tasks[0].state.value == "held"


def test_a_signal_for_a_task_whose_prolog_runs_goes_to_its_node(world: World) -> None:
    world.connect()
    (job,) = world.submit()
    (first,) = world.schedule()
    (result,) = world.act_signal("USR1", str(job))
    assert result.ok  # type: ignore[attr-defined]
    assert SignalAttempt(first.attempt, "SIGUSR1") in [s.message for s in world.sent]
    (held,) = world.submit(hold=True)
    (refused,) = world.act_signal("USR1", str(held))
    assert not refused.ok and "has no running or suspended task" in refused.message  # type: ignore[attr-defined]


def test_a_queues_default_and_maximum_time_limit(world: World) -> None:
    """Slurm's partition DefaultTime and MaxTime: a job naming no limit gets the default (or the
    maximum), one over the maximum is refused with the queue's key."""
    queues = {name: Queue(name, QueueRecord(name), default_time_s=default, max_time_s=maximum)
              for name, default, maximum in (("default", None, None), ("short", 60, 120), ("capped", None, 300))}

    def submitted(**fields: object) -> int | None:
        spec = JobSubmission(**{"script": "true\n", "workdir": "/tmp", **fields})  # type: ignore[arg-type]
        outcome, (job,) = submit(world.state, [spec], "alice", world.now, world.store, queues)
        world.run(outcome)
        return world.state.jobs[job].spec.time_limit_s

    assert submitted(queue="short") == 60
    assert submitted(queue="short", time_limit_s=90) == 90
    assert submitted(queue="capped") == 300
    assert submitted() is None  # the default queue has neither
    with pytest.raises(BadRequest, match="over queue short's limit of 02:00 \\(its max_time_s\\)"):
        submitted(queue="short", time_limit_s=121)


def _three_on_n1(world: World) -> tuple[list[int], str, str]:  # noqa: F811
    """Three jobs on n1 of 3 CPUs: the first started and known to the node, the second started
    and lost by it, the third never received; the jobs, the running and the never-got attempts."""
    world.connect("n1", cpus=3)
    mine = world.submit() + world.submit() + world.submit()
    running, lost, never_got = (start.attempt for start in world.schedule())
    world.started(running)
    world.started(lost)
    return mine, running, never_got


def _hello_again(world: World, monkeypatch: pytest.MonkeyPatch, mine: list[int], running: str,  # noqa: F811
                 never_got: str) -> list[object]:
    """n1 says hello knowing only `running`; the tasks the hello looked at. Checks that the one
    it knows is taken up, the lost one is lost, and the one it never got is sent again."""
    looked_at: list[object] = []
    real = type(world.state).latest_attempt
    monkeypatch.setattr(type(world.state), "latest_attempt",
                        lambda state, task: looked_at.append(task) or real(state, task))
    outcome = on_node_connected(world.state, Hello("n1", 3, 4096, [KnownAttempt(running, True)]), world.now,
                                world.options, world.store)
    monkeypatch.undo()
    before = len(world.sent)
    world.run(outcome)
    sent = [s.message for s in world.sent[before:]]
    assert [m.attempt for m in sent if isinstance(m, StartAttempt)] == [never_got]
    states = {job: world.state.jobs[job].tasks[0].state.value for job in mine}
    assert states == {mine[0]: "running", mine[1]: "pending", mine[2]: "dispatched"}, states
    return looked_at


def test_a_nodes_hello_looks_only_at_what_it_runs(world: World, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """A node saying hello again (after a controller failover, a thousand of them at once) costs
    what it runs, not what the whole cluster runs: its own attempts are taken up again (one it
    knows started, one it lost is lost, one it never got is sent again), and the many tasks
    running on another node are not looked at."""
    mine, running, never_got = _three_on_n1(world)
    world.connect("n2", cpus=150)
    world.submit(array="1-150")
    assert len(world.schedule()) == 150
    world.reload()
    looked_at = _hello_again(world, monkeypatch, mine, running, never_got)
    assert 0 < len(looked_at) <= 3 * 3  # n2's 150 tasks are not walked


def test_a_node_the_controller_did_not_know_has_its_attempts_found_by_a_walk_of_every_job(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """A hello from a node the working set has no record of (its attempts are stored, its own
    record is not: it has no accounting of what it holds) finds them by looking at every job:
    one it knows started is taken up, one it lost is lost, one it never got is sent again, and
    another node's are left as they are."""
    mine, running, never_got = _three_on_n1(world)
    world.connect("n2", cpus=4)
    theirs = world.submit(array="1-4")
    assert len(world.schedule()) == 4
    world.reload()
    del world.state.nodes["n1"]  # what it held is known only from the attempts
    looked_at = _hello_again(world, monkeypatch, mine, running, never_got)
    assert {task.state.value for task in world.state.jobs[theirs[0]].tasks.values()} == {"dispatched"}
    assert world.state.nodes["n1"].state.value == "up"
    assert len(looked_at) >= 3 + 4  # every job's tasks were looked at, n2's too
