"""The planner spreads a parallel job's slots over nodes by its PE's allocation rule when the
snapshot gives the rule (PendingWork.pe_rule): a start names the master node and the job's other
nodes with the CPUs it holds on each (the pe_hostfile's "each involved host ... and the number of
reserved slots (tasks) per host"). Without a rule, a job of a PE stays on one node."""

from __future__ import annotations

from tests.helpers.nodes import a_node

from drover.core.arrays import TaskIndices
from drover.core.node_state import NodeState
from drover.core.resources import Resources
from drover.scheduler.plan import plan
from drover.scheduler.reasons import PendingReason
from drover.scheduler.snapshot import NodeView, PendingIndices, PendingWork, QueueView, Release

NOW = 1000.0


def a_pe_job(number: int, slots: int, rule: str | int = "$pe_slots", memory: int = 0,
             run_limit: float | None = None) -> PendingWork:
    return PendingWork(number, "alice", 0, float(number), Resources(slots, memory),
                       PendingIndices((), TaskIndices(), 0), name=f"job{number}", pe=("mpi", slots),
                       pe_rule=rule, run_limit_s=run_limit)


def a_plain_job(number: int, cpus: int) -> PendingWork:
    return PendingWork(number, "bob", 0, float(number), Resources(cpus, 0), PendingIndices((), TaskIndices(), 0))


def test_pe_hostfile_round_robin_over_two_hosts_gives_each_host_a_slot() -> None:
    result = plan([a_pe_job(1, 2, "$round_robin")], [a_node("n1"), a_node("n2")], NOW, pe_slots={"mpi": 64})
    (start,) = result.starts
    assert (start.node, start.cpu_ids, start.others) == ("n1", (0,), (("n2", (0,)),))


def test_pe_hostfile_fill_up_fills_the_master_host_first() -> None:
    result = plan([a_pe_job(1, 6, "$fill_up")], [a_node("n1"), a_node("n2")], NOW, pe_slots={"mpi": 64})
    (start,) = result.starts
    assert (start.node, start.cpu_ids, start.others) == ("n1", (0, 1, 2, 3), (("n2", (0, 1)),))


def test_pe_hostfile_an_integer_rule_reserves_that_many_slots_per_host() -> None:
    nodes = [a_node("n1"), a_node("n2"), a_node("n3")]
    result = plan([a_pe_job(1, 4, 2)], nodes, NOW, pe_slots={"mpi": 64})
    (start,) = result.starts
    assert (start.node, start.cpu_ids, start.others) == ("n1", (0, 1), (("n2", (0, 1)),))


def test_the_least_loaded_node_is_the_master() -> None:
    result = plan([a_pe_job(1, 3, "$round_robin")], [a_node("n1", free=1), a_node("n2"), a_node("n3", free=2)], NOW,
                  pe_slots={"mpi": 64})
    (start,) = result.starts
    assert start.node == "n2"
    assert [node for node, _ in start.others] == ["n3", "n1"]


def test_without_a_rule_a_pe_job_stays_on_one_node() -> None:
    result = plan([a_pe_job(1, 6)], [a_node("n1"), a_node("n2")], NOW, pe_slots={"mpi": 64})
    assert result.starts == ()
    assert result.pending_reasons == {1: PendingReason.TOO_BIG}


def test_slots_no_nodes_could_hold_are_too_big() -> None:
    nodes = [a_node("n1"), a_node("n2")]
    assert plan([a_pe_job(1, 9, "$fill_up")], nodes, NOW, pe_slots={"mpi": 64}).pending_reasons == {
        1: PendingReason.TOO_BIG}
    assert plan([a_pe_job(1, 6, 4)], nodes, NOW, pe_slots={"mpi": 64}).pending_reasons == {1: PendingReason.TOO_BIG}


def test_the_nodes_room_is_taken_on_every_node_of_the_job() -> None:
    work = [a_pe_job(1, 6, "$fill_up"), a_plain_job(2, 2), a_plain_job(3, 1)]
    result = plan(work, [a_node("n1"), a_node("n2")], NOW, pe_slots={"mpi": 64})
    assert [(start.job, start.node, start.cpu_ids) for start in result.starts] == [
        (1, "n1", (0, 1, 2, 3)), (2, "n2", (2, 3))]
    assert result.pending_reasons == {3: PendingReason.RESOURCES}


def test_a_job_whose_slots_do_not_fit_now_holds_up_the_jobs_behind_it() -> None:
    work = [a_pe_job(1, 6, "$round_robin"), a_plain_job(2, 1)]
    result = plan(work, [a_node("n1", free=2), a_node("n2", free=2)], NOW, pe_slots={"mpi": 64})
    assert result.starts == ()
    assert result.pending_reasons == {1: PendingReason.RESOURCES, 2: PendingReason.PRIORITY}


def test_each_slot_takes_its_share_of_the_jobs_memory() -> None:
    nodes = [a_node("n1", memory_mib=2048), a_node("n2", memory_mib=4096)]
    result = plan([a_pe_job(1, 4, "$fill_up", memory=4096)], nodes, NOW, pe_slots={"mpi": 64})
    (start,) = result.starts  # 1024 MiB a slot: n2 holds 4 of them, n1 2
    assert (start.node, start.cpu_ids, start.others) == ("n1", (0, 1), (("n2", (0, 1)),))


def test_the_pe_slots_cap_holds_for_spread_jobs() -> None:
    result = plan([a_pe_job(1, 4, "$round_robin")], [a_node("n1"), a_node("n2")], NOW, pe_slots={"mpi": 3})
    assert result.starts == ()
    assert result.pending_reasons == {1: PendingReason.PE_SLOTS}


def test_a_spread_job_keeps_to_its_queues_nodes() -> None:
    queues = {"default": QueueView("default", nodes=frozenset({"n2", "n3"}))}
    nodes = [a_node("n1"), a_node("n2"), a_node("n3")]
    result = plan([a_pe_job(1, 2, "$round_robin")], nodes, NOW, queues=queues, pe_slots={"mpi": 64})
    (start,) = result.starts
    assert {start.node, *(node for node, _ in start.others)} == {"n2", "n3"}


def test_behind_a_reservation_a_spread_job_leaves_the_reserved_node_alone() -> None:
    busy = NodeView("n1", NodeState.UP, Resources(4, 8192), Resources(1, 8192), frozenset({3}),
                    releases=(Release(NOW + 100, Resources(3, 0), frozenset(), False),))
    work = [a_plain_job(1, 4), a_pe_job(2, 2, "$round_robin", run_limit=1000.0)]
    result = plan(work, [busy, a_node("n2", free=1), a_node("n3", free=1)], NOW, pe_slots={"mpi": 64})
    assert result.reservation is not None and result.reservation.node == "n1"
    (start,) = result.starts
    assert {start.node, *(node for node, _ in start.others)} == {"n2", "n3"}
    assert result.backfilled == (2,)
