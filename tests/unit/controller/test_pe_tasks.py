"""The controller's check of a request to start a task of a running parallel job on one of its
hosts (GE's tight integration; controller/nodes/pe_tasks.py): the job's owner, a running job, a host of
its attempt, a PE with control_slaves = true; anything else is refused with a clear message. The
order the task's node gets, the report of its end, and its stop when the attempt ends."""

from __future__ import annotations

import pytest
from tests.helpers.controller_world import OK, World, world  # noqa: F401  (a fixture)

from drover.cluster.signing import job_digest, signed_pe_task_order, signed_pe_task_request
from drover.config_schema import ParallelEnvironmentSection
from drover.controller.handlers.dispatch import OrderOptions, schedule
from drover.controller.handlers.node_reports import on_reports
from drover.controller.handlers.parallel_envs import in_effect
from drover.controller.handlers.submit import submit
from drover.controller.nodes import pe_tasks
from drover.controller.nodes.node_channels import NodeChannels
from drover.controller.security.auth import Caller, Policy
from drover.controller.state import ControllerState
from drover.core.errors import Conflict, Forbidden, NotFound
from drover.core.job import Attempt
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import (
    PE_TASK_ACK,
    Ack,
    Exited,
    PeTaskExited,
    SignalAttempt,
    SignalPeTasks,
    StartAttempt,
    StartPeTask,
    StopPeTasks,
    task_script,
)
from drover.records import PeTaskRecord, Usage

PES = in_effect({"mpi": ParallelEnvironmentSection(slots=64, allocation_rule="$round_robin", control_slaves=True),
                 "loose": ParallelEnvironmentSection(slots=64, allocation_rule="$round_robin")})
ORDERS = OrderOptions(1.0, parallel_environments=PES)
POLICY = Policy(owner_uid=0, shared=True)
ALICE, BOB = Caller("alice", 1001, False), Caller("bob", 1002, False)


def _running(world: World, pe: str, slots: str = "2") -> tuple[int, StartAttempt]:  # noqa: F811
    spec = JobSubmission(script="true\n", workdir="/tmp", pe=pe, pe_slots=slots, memory_mib=400)
    outcome, (job,) = submit(world.state, [spec], "alice", world.now, world.store, parallel_environments=PES)
    world.run(outcome)
    before = len(world.sent)
    world.run(schedule(world.state, world.now, world.store, ORDERS))
    (order,) = [s.message for s in world.sent[before:] if isinstance(s.message, StartAttempt)]
    return job, order


def _started(world: World, slots: str = "2") -> tuple[int, StartAttempt, Attempt]:  # noqa: F811
    """A job of `mpi` whose attempt runs, and the attempt, which may start tasks on n2."""
    job, order = _running(world, "mpi", slots)
    world.started(order.attempt)
    _, attempt, _ = pe_tasks.check(world.state, PES, POLICY, ALICE, job, 0, "n2")
    return job, order, attempt


def _two_nodes(world: World) -> None:  # noqa: F811
    world.connect("n1")
    world.connect("n2")


def test_the_owner_of_a_running_job_starts_a_task_on_a_host_of_its_allocation(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order = _running(world, "mpi")
    world.started(order.attempt)
    for host in ("n1", "n2"):
        _, attempt, _ = pe_tasks.check(world.state, PES, POLICY, ALICE, job, 0, host)
        assert attempt.name == order.attempt


def test_gridengine_tight_integration_refusals_are_clear(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    world.connect("n3")
    job, order = _running(world, "mpi")
    with pytest.raises(Conflict, match="is dispatched: a task is started only inside a running job"):
        pe_tasks.check(world.state, PES, POLICY, ALICE, job, 0, "n2")
    world.started(order.attempt)
    with pytest.raises(Forbidden, match=f"job {job} belongs to alice; starting a task in its allocation is for "
                                        "its owner only"):
        pe_tasks.check(world.state, PES, POLICY, BOB, job, 0, "n2")
    with pytest.raises(Forbidden, match=rf"host n3 is not in the allocation of job {job}.0 \(n1, n2\)"):
        pe_tasks.check(world.state, PES, POLICY, ALICE, job, 0, "n3")
    loose, loose_order = _running(world, "loose", "1")
    world.started(loose_order.attempt, node=loose_order.config["node"])
    with pytest.raises(Forbidden, match="the parallel environment loose of job .* has control_slaves = false"):
        pe_tasks.check(world.state, PES, POLICY, ALICE, loose, 0, loose_order.config["node"])
    with pytest.raises(Conflict, match="job 999 is not running"):
        pe_tasks.check(world.state, PES, POLICY, ALICE, 999, 0, "n1")


class _Channels(NodeChannels):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, object]] = []
        self.away: set[str] = set()

    def channel(self, node: str) -> object:  # type: ignore[override]  # every node but those away is connected
        return None if node in self.away else object()

    def send(self, node: str, message: object) -> None:
        self.sent.append((node, message))


def _start(world: World, tasks: pe_tasks.PeTasks, attempt: Attempt, host: str, argv: list[str],  # noqa: F811
           order: StartAttempt, first_task: bool = False, summary: bool = True) -> PeTaskRecord:
    """A task started as the controller starts one: its record committed, then its order sent."""
    environment = ParallelEnvironmentSection(slots=64, allocation_rule="$round_robin", control_slaves=True,
                                             job_is_first_task=first_task, accounting_summary=summary)
    outcome, record = tasks.start(attempt, host, argv, environment, lambda petask: StartPeTask(
        attempt.name, petask, pe_tasks.task_order(order.config, host, [0], 200, petask, None, None), ""))
    world.run(outcome)
    return record


def _end(world: World, tasks: pe_tasks.PeTasks, node: str, message: PeTaskExited) -> list[object]:  # noqa: F811
    """A node's report of a task's end, handled and committed as the controller does; what it sent."""
    job_id, index, number = (int(part) for part in message.attempt.split("."))
    attempt = world.state.attempts.get((job_id, index, number)) or next(
        a for a in world.store.attempts_of(job_id) if (a.index, a.number) == (index, number))
    before = len(world.sent)
    world.run(tasks.ended(world.state, attempt, node, message))
    return [s.message for s in world.sent[before:]]


def _stored(world: World, job: int) -> Attempt:  # noqa: F811
    (attempt,) = world.store.attempts_of(job)
    return attempt


def test_tasks_get_ids_their_end_is_recorded_and_they_stop_when_the_attempt_ends(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order, attempt = _started(world, "4")
    channels = _Channels()
    tasks = pe_tasks.PeTasks(channels, lambda: 5.0)
    before = len(world.sent)
    first, second = (_start(world, tasks, attempt, "n2", ["hostname"], order),
                     _start(world, tasks, attempt, "n2", ["sleep", "1"], order))
    assert (first["petask"], second["petask"]) == ("1", "2")
    sent = world.sent[before].message
    assert isinstance(sent, StartPeTask) and world.sent[before].node == "n2"
    config = pe_tasks.task_order(order.config, "n2", [0], 200, "1", "/work", {"A": "b"})
    assert (config["node"], config["cpu_ids"], config["workdir"], config["environment"], config.get("pe_task"),
            config["job"]["prolog"]) == ("n2", [0], "/work", {"A": "b"}, "1", None)
    # Committed before the order went: a controller started again knows both.
    assert [(r["petask"], r["host"], r["argv"]) for r in _stored(world, job).pe_tasks] == [
        ("1", "n2", ["hostname"]), ("2", "n2", ["sleep", "1"])]
    assert _end(world, tasks, "n1", PeTaskExited(attempt.name, "1", OK)) == [
        Ack([f"{attempt.name}/1"], PE_TASK_ACK)]  # not the task's node: acknowledged, and ignored
    assert pe_tasks.find(attempt, "1")["exit"] is None
    _end(world, tasks, "n2", PeTaskExited(attempt.name, "1", OK))
    assert pe_tasks.find(_stored(world, job), "1")["exit"] == OK
    tasks.sweep(world.state)
    assert channels.sent == []  # the attempt runs: nothing stopped
    world.exited(order.attempt, OK)
    tasks.sweep(world.state)
    assert channels.sent == [("n2", StopPeTasks(attempt.name))]
    assert attempt.name in tasks.watched  # kept for the end of its task 2
    # Its end, after the job's: recorded in the store, and the node told to remove what is left.
    assert _end(world, tasks, "n2", PeTaskExited(attempt.name, "2", OK)) == [
        Ack([f"{attempt.name}/2"], PE_TASK_ACK), StopPeTasks(attempt.name)]
    assert pe_tasks.find(_stored(world, job), "2")["exit"] == OK
    tasks.sweep(world.state)
    assert not tasks.watched


def test_a_restarted_controller_knows_the_tasks_and_stops_those_of_an_ended_attempt(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order, attempt = _started(world)
    _start(world, tasks := pe_tasks.PeTasks(_Channels(), lambda: 5.0), attempt, "n2", ["sleep", "60"], order)
    del tasks
    restarted = pe_tasks.PeTasks(channels := _Channels(), lambda: 6.0)
    state = ControllerState.from_working_set(world.store.load_working_set())
    restarted.load(state)
    assert restarted.watched[attempt.name].running == {"1": "n2"}
    world.exited(order.attempt, OK)  # the job ends after the restart
    restarted.sweep(world.state)
    assert channels.sent == [("n2", StopPeTasks(attempt.name))]
    _end(world, restarted, "n2", PeTaskExited(attempt.name, "1", OK))
    assert pe_tasks.find(_stored(world, job), "1")["exit"] == OK


def test_gridengine_job_is_first_task_the_job_script_holds_a_slot_of_the_master(world: World) -> None:  # noqa: F811
    """sge_pe(5) job_is_first_task: "A value of TRUE indicates that the Sun Grid Engine job script
    already contains one of the tasks of the parallel application": as many tasks at once on a
    host as the job holds slots there, one fewer on the master when it is true."""
    world.connect("n1", cpus=2)
    world.connect("n2", cpus=2)
    job, order, attempt = _started(world, "4")
    tasks = pe_tasks.PeTasks(_Channels(), lambda: 5.0)
    master = attempt.node
    other = next(node for node, _ in attempt.others)
    _start(world, tasks, attempt, master, ["a"], order, first_task=True)
    with pytest.raises(Conflict, match=f"holds 2 slots on {master}, one of them the job script's "
                                       r"\(job_is_first_task = true\), and each runs a task already"):
        _start(world, tasks, attempt, master, ["b"], order, first_task=True)
    _start(world, tasks, attempt, master, ["b"], order, first_task=False)  # false: the script holds none
    for argv in (["c"], ["d"]):
        _start(world, tasks, attempt, other, argv, order, first_task=True)
    with pytest.raises(Conflict, match=f"holds 2 slots on {other}, and each runs a task already"):
        _start(world, tasks, attempt, other, ["e"], order, first_task=True)
    _end(world, tasks, other, PeTaskExited(attempt.name, "3", OK))  # one ends: its slot is free again
    assert _start(world, tasks, attempt, other, ["e"], order, first_task=True)["petask"] == "5"


def test_what_the_owner_signs_of_a_task_is_what_its_node_checks_and_a_change_is_seen(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order = _running(world, "mpi")
    argv, env = ["./solver", "--rank", "1", "a b"], {"OMP_NUM_THREADS": "1"}
    config = pe_tasks.task_order(order.config, "n2", [0], 200, "1", "/work", env, "CRED")
    task = StartPeTask(order.attempt, "1", config, task_script(argv))
    signed = job_digest(signed_pe_task_request(job, "n2", argv, "/work", env))
    assert job_digest(signed_pe_task_order(task)) == signed
    assert task.config["job"]["credential"] == "CRED"  # the task's own, never the job's
    for changed in ({"environment": {"LD_PRELOAD": "/tmp/x.so"}}, {"workdir": "/other"}, {"node": "n1"},
                    {"job_id": job + 1}):
        other = StartPeTask(order.attempt, "1", {**config, **changed}, task.script)  # type: ignore[typeddict-item]
        assert job_digest(signed_pe_task_order(other)) != signed, changed
    assert job_digest(signed_pe_task_order(StartPeTask(order.attempt, "1", config, task_script(["rm", "-rf"])))) \
        != signed


def test_a_node_away_gets_the_stops_and_signals_it_missed_when_it_is_back(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order, attempt = _started(world)
    channels = _Channels()
    tasks = pe_tasks.PeTasks(channels, lambda: 5.0)
    _start(world, tasks, attempt, "n2", ["sleep", "60"], order)
    channels.away.add("n2")
    tasks.stopping(SignalAttempt(attempt.name, "suspend"))
    world.exited(order.attempt, OK)
    tasks.sweep(world.state)
    assert channels.sent == [] and tasks.missed == {
        "n2": [SignalPeTasks(attempt.name, "suspend"), StopPeTasks(attempt.name)]}
    channels.away.clear()
    tasks.node_connected(world.state, "n2", [])
    # What it missed, in order; then the stop of each ended attempt with tasks there (again).
    assert channels.sent == [("n2", SignalPeTasks(attempt.name, "suspend")), ("n2", StopPeTasks(attempt.name)),
                             ("n2", StopPeTasks(attempt.name))] and not tasks.missed


def _usage(cpu_s: float, rss_kib: int, **more: float) -> Usage:
    return Usage(user_cpu_s=cpu_s, sys_cpu_s=0.0, max_rss_kib=rss_kib, minor_faults=1, major_faults=0,
                 voluntary_switches=1, involuntary_switches=0, wall_s=10.0, started_at=1.0, ended_at=11.0,
                 **more)  # type: ignore[typeddict-item]


def test_a_tasks_usage_is_counted_in_its_attempts_once_whether_it_ends_before_or_after_it(world: World) -> None:  # noqa: F811
    world.connect("n1", cpus=4)
    world.connect("n2", cpus=4)
    job, order, attempt = _started(world, "6")
    tasks = pe_tasks.PeTasks(_Channels(), lambda: 5.0)
    for _ in range(3):
        _start(world, tasks, attempt, "n2", ["burn"], order)
    _end(world, tasks, "n2", PeTaskExited(attempt.name, "1", OK, _usage(2.0, 5000, cgroup_cpu_s=3.0)))
    _end(world, tasks, "n2", PeTaskExited(attempt.name, "2", OK, _usage(4.0, 100)))
    world.run(on_reports(world.state, "n1", [Exited(attempt.name, dict(OK), _usage(1.0, 1000,  # type: ignore[arg-type]
                                                                                     cgroup_cpu_s=1.5))], world.now))
    stored = _stored(world, job)
    counted = stored.usage
    assert counted is not None
    # The master's 1.5 s and the tasks' 3 s (their cgroup's) and 4 s; the largest memory.
    assert (counted["cgroup_cpu_s"], counted["user_cpu_s"], counted["max_rss_kib"]) == (8.5, 7.0, 5000)
    assert (counted["wall_s"], counted["minor_faults"]) == (10.0, 3)  # the master's wall time; counters add
    assert [r["counted"] for r in stored.pe_tasks] == [True, True, False]
    # The last task ends after its attempt: counted at once, on top, in the same commit; its
    # report sent again changes nothing.
    late = PeTaskExited(attempt.name, "3", OK, _usage(0.5, 9000, cgroup_peak_memory_bytes=1 << 30))
    for _ in range(2):
        _end(world, tasks, "n2", late)
        usage = _stored(world, job).usage
        assert usage is not None and (usage["cgroup_cpu_s"], usage["max_rss_kib"],
                                      usage["cgroup_peak_memory_bytes"]) == (9.0, 9000, 1 << 30)
    tasks.sweep(world.state)  # stopped, and every task reported: forgotten
    assert not tasks.watched


def test_gridengine_accounting_summary_false_keeps_each_tasks_usage_out_of_its_jobs(world: World) -> None:  # noqa: F811
    """sge_pe(5) accounting_summary false (its default): a record for the master and one for each
    task, so the job's record is its script's alone; true: one record for the whole job."""
    _two_nodes(world)
    job, order, attempt = _started(world)
    tasks = pe_tasks.PeTasks(_Channels(), lambda: 5.0)
    _start(world, tasks, attempt, "n2", ["burn"], order, summary=False)
    _end(world, tasks, "n2", PeTaskExited(attempt.name, "1", OK, _usage(4.0, 9000)))
    world.run(on_reports(world.state, "n1", [Exited(attempt.name, dict(OK), _usage(1.0, 1000))],  # type: ignore[arg-type]
                         world.now))
    stored = _stored(world, job)
    assert stored.usage is not None and (stored.usage["user_cpu_s"], stored.usage["max_rss_kib"]) == (1.0, 1000)
    (record,) = stored.pe_tasks
    assert record["usage"] is not None and record["usage"]["user_cpu_s"] == 4.0 and not record["summed"]


def test_a_stopped_attempt_is_kept_for_its_tasks_ends_for_a_while(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order, attempt = _started(world)
    now = [5.0]
    tasks = pe_tasks.PeTasks(_Channels(), lambda: now[0])
    _start(world, tasks, attempt, "n2", ["sleep", "60"], order)
    world.exited(order.attempt, OK)
    tasks.sweep(world.state)
    assert attempt.name in tasks.watched  # its task has not reported its end yet
    now[0] += pe_tasks.KEEP_STOPPED_S + 1
    tasks.sweep(world.state)
    assert not tasks.watched


def test_a_suspend_resume_or_signal_of_the_attempt_reaches_its_running_tasks_hosts(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order, attempt = _started(world, "4")
    channels = _Channels()
    tasks = pe_tasks.PeTasks(channels, lambda: 5.0)
    for host in ("n1", "n2", "n2"):
        _start(world, tasks, attempt, host, ["sleep", "60"], order)
    _end(world, tasks, "n1", PeTaskExited(attempt.name, "1", OK))  # n1's task ended: nothing to tell n1
    for action in ("suspend", "resume", "USR1", "checkpoint", "migrate"):
        tasks.stopping(SignalAttempt(attempt.name, action))
    assert channels.sent == [("n2", SignalPeTasks(attempt.name, action)) for action in ("suspend", "resume", "USR1")]
    tasks.stopping(SignalAttempt(attempt.name, "terminate", "cancel"))
    tasks.stopping(SignalAttempt(attempt.name, "resume"))  # stopped: its tasks get no more orders
    assert channels.sent[3:] == [(host, StopPeTasks(attempt.name)) for host in ("n1", "n2")]


def test_one_task_is_stopped_on_its_host_and_the_attempt_goes_on(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order, attempt = _started(world, "4")
    channels = _Channels()
    tasks = pe_tasks.PeTasks(channels, lambda: 5.0)
    for _ in range(2):
        _start(world, tasks, attempt, "n2", ["sleep", "60"], order)
    assert tasks.stop_task(attempt, "2")["petask"] == "2"
    assert channels.sent == [("n2", StopPeTasks(attempt.name, "2"))]
    assert tasks.watched[attempt.name].stopped_at is None  # its other task runs on, and more may start
    _end(world, tasks, "n2", PeTaskExited(attempt.name, "2", OK))
    tasks.stop_task(attempt, "2")  # it ended: nothing to stop
    assert len(channels.sent) == 1
    with pytest.raises(NotFound):
        tasks.stop_task(attempt, "9")


def test_a_node_saying_hello_with_tasks_of_an_attempt_that_ended_meanwhile_is_told_to_stop_them(
        world: World) -> None:  # noqa: F811
    """The controller was away when the job ended (its stop of the tasks never went out): the
    node names, in its hello, the attempts whose tasks it runs, and those that no longer run get
    their stop; a running one's tasks are left alone."""
    _two_nodes(world)
    job, order = _running(world, "mpi")
    world.started(order.attempt)
    other, other_order = _running(world, "mpi")
    world.started(other_order.attempt)
    world.exited(order.attempt, OK)
    channels = _Channels()
    restarted = pe_tasks.PeTasks(channels, lambda: 5.0)  # knows nothing of the first job's tasks
    restarted.node_connected(world.state, "n2", [order.attempt, other_order.attempt, "not.an.attempt"])
    assert channels.sent == [("n2", StopPeTasks(order.attempt))]


def test_a_task_its_node_does_not_know_at_its_hello_ends_failed_and_one_it_knows_runs_on(
        world: World) -> None:  # noqa: F811
    """The order of task 1 never reached n2 (the connection it went on was gone, or the node
    daemon died holding it or its refusal): n2's hello does not name it, so it ends, failed, and
    its caller stops waiting. Task 2 runs there (or its end waits for its acknowledgement): it is
    named, and left alone. A node of an earlier version names none: nothing is ended."""
    _two_nodes(world)
    job, order, attempt = _started(world, "4")
    tasks = pe_tasks.PeTasks(_Channels(), lambda: 5.0)
    for argv in (["true"], ["sleep", "60"]):
        _start(world, tasks, attempt, "n2", argv, order)
    assert tasks.node_connected(world.state, "n2", [attempt.name], None) == []
    assert tasks.node_connected(world.state, "n1", [], []) == []  # neither was sent to n1
    (lost,) = tasks.node_connected(world.state, "n2", [attempt.name], [f"{attempt.name}/2"])
    assert (lost.attempt, lost.petask) == (attempt.name, "1")
    assert lost.exit_status["failure"] == "node n2 does not know the task: its order, or its refusal, was lost"
    _end(world, tasks, "n2", lost)  # recorded as the node daemon's own report would be
    record = pe_tasks.find(_stored(world, job), "1")
    assert record["ended_at"] is not None and record["exit"] is not None and record["exit"]["exit_code"] is None
    assert pe_tasks.find(_stored(world, job), "2")["ended_at"] is None
    assert tasks.node_connected(world.state, "n2", [], []) == [
        PeTaskExited(attempt.name, "2", pe_tasks.lost_on("n2"))]  # 1 is no longer waited for


def test_a_task_whose_start_was_never_committed_is_not_waited_for_after_a_hello(world: World) -> None:  # noqa: F811
    """The commit of a task's start failed (the store refused it), so its record is not the
    attempt's; the node's hello does not name it either: its made-up end finds no record, and it
    is no longer waited for, so the next hello ends nothing."""
    _two_nodes(world)
    job, order, attempt = _started(world, "4")
    tasks = pe_tasks.PeTasks(_Channels(), lambda: 5.0)
    _start(world, tasks, attempt, "n2", ["true"], order)
    attempt.pe_tasks.clear()  # as the attempt put back from the store holds it
    (lost,) = tasks.node_connected(world.state, "n2", [attempt.name], [])
    world.run(tasks.ended(world.state, attempt, "n2", lost))
    assert tasks.node_connected(world.state, "n2", [attempt.name], []) == []
    tasks.still_running(lost, "n2")  # its end's commit refused: waited for again
    assert tasks.node_connected(world.state, "n2", [attempt.name], []) == [lost]
