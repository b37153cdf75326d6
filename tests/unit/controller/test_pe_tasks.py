"""The controller's check of a request to start a task of a running parallel job on one of its
hosts (GE's tight integration; controller/pe_tasks.py): the job's owner, a running job, a host of
its attempt, a PE with control_slaves = true; anything else is refused with a clear message. The
order the task's node gets, the report of its end, and its stop when the attempt ends."""

from __future__ import annotations

import pytest
from tests.unit.controller.test_handlers import OK, World, world  # noqa: F401  (a fixture)

from drover.cluster.signing import job_digest, signed_pe_task_order, signed_pe_task_request
from drover.config_schema import ParallelEnvironmentSection
from drover.controller import pe_tasks
from drover.controller.auth import Caller, Policy
from drover.controller.handlers.dispatch import OrderOptions, schedule
from drover.controller.handlers.submit import submit
from drover.controller.node_channels import NodeChannels
from drover.controller.parallel_envs import in_effect
from drover.core.errors import Conflict, Forbidden
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import (
    PeTaskExited,
    StartAttempt,
    StartPeTask,
    StopPeTasks,
    task_script,
)

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
