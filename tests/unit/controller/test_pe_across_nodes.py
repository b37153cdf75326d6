"""A job of a parallel environment whose allocation rule spreads its slots over several nodes
(sge_pe(5) $round_robin, $fill_up, N): its attempt holds room on every node, the master first;
its order names every host for the pe_hostfile ("containing each involved host ... and the number
of reserved slots (tasks) per host"); what it held comes back on every node when it ends, and
survives a restart of the controller; losing one of its other nodes ends the attempt as losing
its master would. On plain data, with a real store."""

from __future__ import annotations

from tests.helpers.controller_world import OK, World, world  # noqa: F401  (a fixture)

from drover.config_schema import ParallelEnvironmentSection
from drover.controller.handlers.dispatch import OrderOptions, schedule
from drover.controller.handlers.node_reports import on_node_disconnected, on_nodes_lost
from drover.controller.handlers.parallel_envs import in_effect
from drover.controller.handlers.submit import submit
from drover.controller.state import ControllerState
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import SignalAttempt, StartAttempt

PES = in_effect({"mpi": ParallelEnvironmentSection(slots=64, allocation_rule="$round_robin"),
                 "fill": ParallelEnvironmentSection(slots=64, allocation_rule="$fill_up")})
ORDERS = OrderOptions(1.0, parallel_environments=PES)


def _submit(world: World, pe: str, slots: str) -> int:  # noqa: F811
    spec = JobSubmission(script="true\n", workdir="/tmp", pe=pe, pe_slots=slots, memory_mib=400)
    outcome, (job,) = submit(world.state, [spec], "alice", world.now, world.store, parallel_environments=PES)
    world.run(outcome)
    return job


def _schedule(world: World) -> list[StartAttempt]:  # noqa: F811
    before = len(world.sent)
    world.run(schedule(world.state, world.now, world.store, ORDERS))
    return [s.message for s in world.sent[before:] if isinstance(s.message, StartAttempt)]


def _used(world: World) -> dict[str, tuple[int, int, int]]:  # noqa: F811
    return {name: (len(node.used_cpu_ids), node.used_memory_mib, node.running) for name, node in world.state.nodes.items()}


def test_pe_hostfile_round_robin_holds_a_slot_on_each_host_and_names_every_host(world: World) -> None:  # noqa: F811
    world.connect("n1")
    world.connect("n2")
    job = _submit(world, "mpi", "2")
    (order,) = _schedule(world)
    assert order.config["node"] == "n1" and order.config["cpu_ids"] == [0]
    assert order.config["pe_hosts"] == [{"node": "n2", "cpu_ids": [0]}]
    assert order.config["job"]["pe_slots"] == 2 and order.config["memory_mib"] == 200  # its master's share
    assert _used(world) == {"n1": (1, 200, 1), "n2": (1, 200, 1)}
    (attempt,) = world.store.attempts_of(job)
    assert attempt.others == (("n2", (0,)),)
    reloaded = ControllerState.from_working_set(world.store.load_working_set())
    reloaded.check_invariants()
    assert {name: len(node.used_cpu_ids) for name, node in reloaded.nodes.items()} == {"n1": 1, "n2": 1}
    world.started(order.attempt)
    world.exited(order.attempt, OK)
    assert _used(world) == {"n1": (0, 0, 0), "n2": (0, 0, 0)}
    assert world.store.load_job(job).state.value == "completed"  # type: ignore[union-attr]


def test_fill_up_takes_more_slots_than_one_node_has(world: World) -> None:  # noqa: F811
    world.connect("n1")
    world.connect("n2")
    _submit(world, "fill", "3")  # the nodes have 2 CPUs each
    (order,) = _schedule(world)
    assert (order.config["node"], order.config["cpu_ids"], order.config["pe_hosts"]) == (
        "n1", [0, 1], [{"node": "n2", "cpu_ids": [0]}])


def test_losing_another_node_of_a_parallel_job_ends_its_attempt_as_losing_its_master(world: World) -> None:  # noqa: F811
    world.connect("n1")
    world.connect("n2")
    job = _submit(world, "mpi", "2")
    (order,) = _schedule(world)
    world.started(order.attempt)
    world.run(on_node_disconnected(world.state, "n2", world.now))
    world.now += 11
    world.sent.clear()
    world.run(on_nodes_lost(world.state, world.now, 10.0))
    stops = [(s.node, s.message.attempt, s.message.action) for s in world.sent if isinstance(s.message, SignalAttempt)]
    assert stops == [("n1", order.attempt, "terminate")]  # the master is told to stop it
    assert world.state.jobs[job].tasks[0].state.value == "pending"  # requeued, as for a lost master
    (lost,) = world.store.attempts_of(job)
    assert lost.exit is not None and lost.exit["failure"] == "node n2 of its parallel job was lost"
    assert _used(world) == {"n1": (0, 0, 0), "n2": (0, 0, 0)}


def test_a_jobs_own_slots_on_each_node_replace_its_pes_rule_in_the_planner(world: World) -> None:  # noqa: F811
    """A job of `slurm` ($fill_up) with pe_per_node 2 gets exactly 2 slots on each of 2 nodes,
    where $fill_up would fill the first node (sbatch -N 2 --ntasks-per-node=2)."""
    for name in ("n1", "n2", "n3"):
        world.connect(name, cpus=4)
    spec = JobSubmission(script="true\n", workdir="/tmp", pe="slurm", pe_slots="4", pe_per_node=2, memory_mib=400)
    outcome, (job,) = submit(world.state, [spec], "alice", world.now, world.store, parallel_environments=PES)
    world.run(outcome)
    assert world.state.jobs[job].spec.pe_per_node == 2
    (order,) = _schedule(world)
    assert (order.config["node"], order.config["cpu_ids"], order.config["job"]["pe_slots"]) == ("n1", [0, 1], 4)
    assert order.config["pe_hosts"] == [{"node": "n2", "cpu_ids": [0, 1]}]
    assert _used(world) == {"n1": (2, 200, 1), "n2": (2, 200, 1), "n3": (0, 0, 0)}
    fill = JobSubmission(script="true\n", workdir="/tmp", pe="slurm", pe_slots="4", memory_mib=400)
    world.run(submit(world.state, [fill], "alice", world.now, world.store, parallel_environments=PES)[0])
    (filled,) = _schedule(world)
    assert (filled.config["node"], len(filled.config["cpu_ids"]), filled.config.get("pe_hosts", [])) == ("n3", 4, [])
