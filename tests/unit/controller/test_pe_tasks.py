"""The controller's check of a request to start a task of a running parallel job on one of its
hosts (GE's tight integration; controller/pe_tasks.py): the job's owner, a running job, a host of
its attempt, a PE with control_slaves = true; anything else is refused with a clear message. The
order the task's node gets, the report of its end, and its stop when the attempt ends."""

from __future__ import annotations

import pytest
from tests.unit.controller.test_handlers import OK, World, world  # noqa: F401  (a fixture)

from drover.cluster.signing import job_digest, signed_pe_task_order, signed_pe_task_request
from drover.config_schema import ParallelEnvironmentSection
from drover.controller import pe_tasks, pe_usage
from drover.controller.auth import Caller, Policy
from drover.controller.handlers.dispatch import OrderOptions, schedule
from drover.controller.handlers.node_reports import on_reports
from drover.controller.handlers.submit import submit
from drover.controller.node_channels import NodeChannels
from drover.controller.parallel_envs import in_effect
from drover.core.errors import Conflict, Forbidden, NotFound
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import (
    Exited,
    PeTaskExited,
    SignalAttempt,
    SignalPeTasks,
    StartAttempt,
    StartPeTask,
    StopPeTasks,
    task_script,
)
from drover.records import Usage

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


def _two_nodes(world: World) -> None:  # noqa: F811
    world.connect("n1")
    world.connect("n2")


def test_the_owner_of_a_running_job_starts_a_task_on_a_host_of_its_allocation(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order = _running(world, "mpi")
    world.started(order.attempt)
    for host in ("n1", "n2"):
        _, attempt = pe_tasks.check(world.state, PES, POLICY, ALICE, job, 0, host)
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
    world.started(loose_order.attempt)
    with pytest.raises(Forbidden, match="the parallel environment loose of job .* has control_slaves = false"):
        pe_tasks.check(world.state, PES, POLICY, ALICE, loose, 0, loose_order.config["node"])
    with pytest.raises(Conflict, match="job 999 is not running"):
        pe_tasks.check(world.state, PES, POLICY, ALICE, 999, 0, "n1")


class _Channels(NodeChannels):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, object]] = []

    def channel(self, node: str) -> object:  # type: ignore[override]  # every node is connected here
        return object()

    def send(self, node: str, message: object) -> None:
        self.sent.append((node, message))


def test_tasks_get_ids_their_end_is_recorded_and_they_stop_when_the_attempt_ends(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order = _running(world, "mpi")
    world.started(order.attempt)
    _, attempt = pe_tasks.check(world.state, PES, POLICY, ALICE, job, 0, "n2")
    channels = _Channels()
    tasks = pe_tasks.PeTasks(channels, lambda: 5.0)

    def build(petask: str) -> StartPeTask:
        config = pe_tasks.task_order(order.config, "n2", [0], 200, petask, "/work", {"A": "b"})
        return StartPeTask(attempt.name, petask, config, "exec hostname\n")

    first, second = tasks.start(attempt, "n2", ["hostname"], build), tasks.start(attempt, "n2", ["sleep", "1"], build)
    assert (first.petask, second.petask) == ("1", "2")
    (_, sent), _ = channels.sent
    assert isinstance(sent, StartPeTask)
    assert (sent.config["node"], sent.config["cpu_ids"], sent.config["workdir"], sent.config["environment"],
            sent.config.get("pe_task"), sent.config["job_prolog"]) == ("n2", [0], "/work", {"A": "b"}, "1", None)
    tasks.take("n1", [PeTaskExited(attempt.name, "1", OK)])  # not the task's node: ignored
    assert tasks.find(attempt.name, "1").exit_status is None
    tasks.take("n2", [PeTaskExited(attempt.name, "1", OK)])
    assert tasks.find(attempt.name, "1").exit_status == OK
    tasks.sweep(world.state)
    assert len(channels.sent) == 2  # the attempt runs: nothing stopped
    world.exited(order.attempt, OK)
    tasks.sweep(world.state)
    assert channels.sent[2:] == [("n2", StopPeTasks(attempt.name))]
    assert tasks.attempts[attempt.name].stopped  # kept for the end of its task 2
    tasks.take("n2", [PeTaskExited(attempt.name, "2", OK)])
    assert not tasks.attempts


def test_what_the_owner_signs_of_a_task_is_what_its_node_checks_and_a_change_is_seen(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order = _running(world, "mpi")
    argv, env = ["./solver", "--rank", "1", "a b"], {"OMP_NUM_THREADS": "1"}
    config = pe_tasks.task_order(order.config, "n2", [0], 200, "1", "/work", env, "CRED")
    task = StartPeTask(order.attempt, "1", config, task_script(argv))
    signed = job_digest(signed_pe_task_request(job, "n2", argv, "/work", env))
    assert job_digest(signed_pe_task_order(task)) == signed
    assert task.config.get("credential") == "CRED"  # the task's own, never the job's
    for changed in ({"environment": {"LD_PRELOAD": "/tmp/x.so"}}, {"workdir": "/other"}, {"node": "n1"},
                    {"job_id": job + 1}):
        other = StartPeTask(order.attempt, "1", {**config, **changed}, task.script)  # type: ignore[typeddict-item]
        assert job_digest(signed_pe_task_order(other)) != signed, changed
    assert job_digest(signed_pe_task_order(StartPeTask(order.attempt, "1", config, task_script(["rm", "-rf"])))) \
        != signed


def test_a_node_away_when_the_attempt_ended_is_told_to_stop_its_tasks_when_it_is_back(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order = _running(world, "mpi")
    world.started(order.attempt)
    _, attempt = pe_tasks.check(world.state, PES, POLICY, ALICE, job, 0, "n2")
    channels = _Channels()
    tasks = pe_tasks.PeTasks(channels, lambda: 5.0)
    tasks.start(attempt, "n2", ["sleep", "60"], lambda petask: StartPeTask(
        attempt.name, petask, pe_tasks.task_order(order.config, "n2", [0], 200, petask, None, None), ""))
    channels.channel = lambda node: None  # type: ignore[method-assign]  # n2 went away
    world.exited(order.attempt, OK)
    tasks.sweep(world.state)
    assert len(channels.sent) == 1 and tasks.unsent == {"n2": {attempt.name}}
    tasks.node_connected("n2")
    assert channels.sent[1:] == [("n2", StopPeTasks(attempt.name))] and not tasks.unsent


def _usage(cpu_s: float, rss_kib: int, **more: float) -> Usage:
    return Usage(user_cpu_s=cpu_s, sys_cpu_s=0.0, max_rss_kib=rss_kib, minor_faults=1, major_faults=0,
                 voluntary_switches=1, involuntary_switches=0, wall_s=10.0, started_at=1.0, ended_at=11.0,
                 **more)  # type: ignore[typeddict-item]


def test_a_tasks_usage_is_counted_in_its_attempts_whether_it_ends_before_or_after_it(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order = _running(world, "mpi")
    world.started(order.attempt)
    _, attempt = pe_tasks.check(world.state, PES, POLICY, ALICE, job, 0, "n2")
    tasks = pe_tasks.PeTasks(_Channels(), lambda: 5.0)
    world.state.pe_usage = tasks.ended  # as the controller shares them
    for _ in range(3):
        tasks.start(attempt, "n2", ["burn"], lambda petask: StartPeTask(
            attempt.name, petask, pe_tasks.task_order(order.config, "n2", [0], 200, petask, None, None), ""))
    assert tasks.take("n2", [PeTaskExited(attempt.name, "1", OK, _usage(2.0, 5000, cgroup_cpu_s=3.0))]) \
        == [attempt.name]
    assert tasks.take("n2", [PeTaskExited(attempt.name, "2", OK, _usage(4.0, 100))]) == [attempt.name]
    world.run(on_reports(world.state, "n1", [Exited(attempt.name, dict(OK), _usage(1.0, 1000,  # type: ignore[arg-type]
                                                                                     cgroup_cpu_s=1.5))], world.now))
    assert attempt.name not in tasks.ended  # counted
    (stored,) = world.store.attempts_of(job)
    counted = stored.usage
    assert counted is not None
    # The master's 1.5 s and the tasks' 3 s (their cgroup's) and 4 s; the largest memory.
    assert (counted["cgroup_cpu_s"], counted["user_cpu_s"], counted["max_rss_kib"]) == (8.5, 7.0, 5000)
    assert (counted["wall_s"], counted["minor_faults"]) == (10.0, 3)  # the master's wall time; counters add
    # The last task ends after its attempt: counted at once, on top (the controller commits it).
    tasks.take("n2", [PeTaskExited(attempt.name, "3", OK, _usage(0.5, 9000, cgroup_peak_memory_bytes=1 << 30))])
    late = pe_usage.fold(counted, tasks.ended.pop(attempt.name))
    assert late is not None and (late["cgroup_cpu_s"], late["max_rss_kib"], late["cgroup_peak_memory_bytes"]) == (
        9.0, 9000, 1 << 30)
    tasks.sweep(world.state)  # stopped, and every task reported: forgotten
    assert not tasks.attempts


def test_a_stopped_attempt_is_kept_for_its_tasks_ends_for_a_while(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order = _running(world, "mpi")
    world.started(order.attempt)
    _, attempt = pe_tasks.check(world.state, PES, POLICY, ALICE, job, 0, "n2")
    now = [5.0]
    tasks = pe_tasks.PeTasks(_Channels(), lambda: now[0])
    tasks.start(attempt, "n2", ["sleep", "60"], lambda petask: StartPeTask(
        attempt.name, petask, pe_tasks.task_order(order.config, "n2", [0], 200, petask, None, None), ""))
    world.exited(order.attempt, OK)
    tasks.sweep(world.state)
    assert attempt.name in tasks.attempts  # its task has not reported its end yet
    now[0] += pe_tasks.KEEP_STOPPED_S + 1
    tasks.sweep(world.state)
    assert not tasks.attempts


def test_a_suspend_resume_or_signal_of_the_attempt_reaches_its_running_tasks_hosts(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order = _running(world, "mpi")
    world.started(order.attempt)
    _, attempt = pe_tasks.check(world.state, PES, POLICY, ALICE, job, 0, "n2")
    channels = _Channels()
    tasks = pe_tasks.PeTasks(channels, lambda: 5.0)
    for host in ("n1", "n2", "n2"):
        tasks.start(attempt, host, ["sleep", "60"], lambda petask, host=host: StartPeTask(  # type: ignore[misc]
            attempt.name, petask, pe_tasks.task_order(order.config, host, [0], 200, petask, None, None), ""))
    tasks.take("n1", [PeTaskExited(attempt.name, "1", OK)])  # n1's task ended: nothing to tell n1
    started = len(channels.sent)
    for action in ("suspend", "resume", "USR1", "checkpoint", "migrate"):
        tasks.stopping(SignalAttempt(attempt.name, action))
    assert channels.sent[started:] == [("n2", SignalPeTasks(attempt.name, action))
                                       for action in ("suspend", "resume", "USR1")]
    tasks.stopping(SignalAttempt(attempt.name, "terminate", "cancel"))
    tasks.stopping(SignalAttempt(attempt.name, "resume"))  # stopped: its tasks get no more orders
    assert channels.sent[started + 3:] == [(host, StopPeTasks(attempt.name)) for host in ("n1", "n2")]


def test_one_task_is_stopped_on_its_host_and_the_attempt_goes_on(world: World) -> None:  # noqa: F811
    _two_nodes(world)
    job, order = _running(world, "mpi")
    world.started(order.attempt)
    _, attempt = pe_tasks.check(world.state, PES, POLICY, ALICE, job, 0, "n2")
    channels = _Channels()
    tasks = pe_tasks.PeTasks(channels, lambda: 5.0)
    for _ in range(2):
        tasks.start(attempt, "n2", ["sleep", "60"], lambda petask: StartPeTask(
            attempt.name, petask, pe_tasks.task_order(order.config, "n2", [0], 200, petask, None, None), ""))
    started = len(channels.sent)
    assert tasks.stop_task(attempt.name, "2").petask == "2"
    assert channels.sent[started:] == [("n2", StopPeTasks(attempt.name, "2"))]
    assert not tasks.attempts[attempt.name].stopped  # its other task runs on, and more may start
    tasks.take("n2", [PeTaskExited(attempt.name, "2", OK)])
    tasks.stop_task(attempt.name, "2")  # it ended: nothing to stop
    assert len(channels.sent) == started + 1
    with pytest.raises(NotFound):
        tasks.stop_task(attempt.name, "9")
