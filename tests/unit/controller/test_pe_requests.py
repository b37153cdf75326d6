"""A job's parallel environment as the controller checks it when it is submitted
(controller/handlers/parallel_envs.py): sge_pe(5)'s user lists, qsub's slot ranges, one clear error each."""

from __future__ import annotations

import pytest

from drover.config_schema import ParallelEnvironmentSection
from drover.controller.handlers.parallel_envs import SLURM, SMP, checked, in_effect
from drover.core.errors import BadRequest
from drover.protocol.api import JobSubmission

PES = in_effect({"mpi": ParallelEnvironmentSection(slots=6, allocation_rule="$fill_up", xuser_lists=["eve"]),
                 "quad": ParallelEnvironmentSection(slots=64, allocation_rule="4", user_lists=["alice"])})


def a_job(pe: str | None, slots: str | None, cpus: int = 1) -> JobSubmission:
    return JobSubmission(script="true\n", workdir="/w", pe=pe, pe_slots=slots, cpus=cpus)


def test_a_job_gets_its_pe_and_the_largest_slots_of_its_range_that_fit() -> None:
    assert checked(a_job(None, None), PES, "alice", [8]) is None
    assert checked(a_job("mpi", "4"), PES, "alice", [8]) == ("mpi", 4)
    assert checked(a_job("mpi", "2-16"), PES, "alice", [8, 4]) == ("mpi", 6)  # the PE's 6 slots
    assert checked(a_job("smp", "2-"), PES, "alice", [8]) == ("smp", 8)  # the largest node's 8 CPUs
    assert checked(a_job("quad", "2-8"), PES, "alice", [8]) == ("quad", 4)  # 4 a node, on one node
    assert in_effect({"smp": PES["mpi"]})["smp"] is PES["mpi"] and PES["smp"] is SMP  # drover.toml's smp wins


@pytest.mark.parametrize(("job", "owner", "message"), [
    (a_job("nope", "2"), "alice", "unknown parallel environment 'nope'; this cluster has mpi, quad, slurm, smp"),
    (a_job("mpi", "2"), "eve", "eve may not use parallel environment mpi (its user_lists and xuser_lists)"),
    (a_job("quad", "4"), "bob", "bob may not use parallel environment quad"),
    (a_job("mpi", "2", cpus=2), "alice", "--pe gives the job its CPUs, one a slot: leave out --cpus"),
    (a_job(None, "2"), "alice", "slots without a parallel environment: give --pe NAME SLOTS"),
    (a_job("mpi", "7"), "alice", "--pe mpi 7: 7 slots cannot run: the parallel environment has 6 slots"),
    (a_job("quad", "8"), "alice", "--pe quad 8: the allocation rule 4 puts 4 slots on each node: 8 slots would "
                                  "take 2 nodes of 4 CPUs or more, and 1 is there"),
    (a_job("smp", "9"), "alice", "--pe smp 9: 9 slots cannot run on one node: the largest node has 8 CPUs"),
    (a_job("mpi", "two"), "alice", "--pe mpi two: the slots of a parallel environment are a number or a range"),
])
def test_a_bad_pe_request_is_refused_in_the_users_words(job: JobSubmission, owner: str, message: str) -> None:
    with pytest.raises(BadRequest) as refused:
        checked(job, PES, owner, [8])
    assert str(refused.value).startswith(message), str(refused.value)


def test_allocation_rules_across_hosts_take_slots_of_every_node() -> None:
    """sge_pe(5): $fill_up, $round_robin and an integer rule spread the slots over the hosts, so a
    job may ask for more slots than its largest node has CPUs; $pe_slots keeps them on one."""
    assert checked(a_job("mpi", "6"), PES, "alice", [4, 4]) == ("mpi", 6)
    assert checked(a_job("quad", "8"), PES, "alice", [8, 4, 2]) == ("quad", 8)  # 4 on each of 2 nodes
    assert checked(a_job("quad", "2-16"), PES, "alice", [8, 4, 2]) == ("quad", 8)  # 2 nodes of 4 or more
    with pytest.raises(BadRequest, match="the allocation rule 4 puts 4 slots on each node: 6 slots are no multiple of 4"):
        checked(a_job("quad", "6"), PES, "alice", [8, 8])
    with pytest.raises(BadRequest, match="the nodes have 8 CPUs in all"):
        checked(a_job("big", "9"), in_effect({"big": ParallelEnvironmentSection(slots=64, allocation_rule="$round_robin")}),
                "alice", [4, 4])
    with pytest.raises(BadRequest, match="cannot run on one node"):
        checked(a_job("smp", "6"), PES, "alice", [4, 4])
    with pytest.raises(BadRequest, match="cannot run on one node"):  # devices keep a job on one node
        checked(JobSubmission(script="true\n", workdir="/w", pe="mpi", pe_slots="6", gres=["gpu:1"]), PES, "alice",
                [4, 4])


def a_job_of(slots: str, per_node: int, pe: str = "slurm", **more: object) -> JobSubmission:
    return JobSubmission(script="true\n", workdir="/w", pe=pe, pe_slots=slots, pe_per_node=per_node, **more)


def test_a_jobs_own_slots_on_each_node_stand_for_its_pes_rule() -> None:
    """pe_per_node N is the integer rule N for that job: N slots on each node it gets, checked
    against the nodes as the PE's own integer rule would be, whatever the PE's rule."""
    assert SLURM.control_slaves and not SLURM.job_is_first_task and SLURM.accounting_summary
    assert PES["slurm"] is SLURM and in_effect({"slurm": PES["mpi"]})["slurm"] is PES["mpi"]
    assert checked(a_job_of("4", 2), PES, "alice", [4, 2]) == ("slurm", 4)  # 2 on each of 2 nodes
    assert checked(a_job_of("2-16", 4), PES, "alice", [8, 4, 2]) == ("slurm", 8)  # 2 nodes of 4 or more
    assert checked(a_job_of("8", 4, pe="smp"), PES, "alice", [4, 4]) == ("smp", 8)  # over $pe_slots too


@pytest.mark.parametrize(("job", "message"), [
    (a_job_of("6", 4), "--pe slurm 6, 4 on each node: the allocation rule 4 puts 4 slots on each node: 6 slots are "
                       "no multiple of 4"),
    (a_job_of("12", 4), "--pe slurm 12, 4 on each node: the allocation rule 4 puts 4 slots on each node: 12 slots "
                        "would take 3 nodes of 4 CPUs or more, and 2 are there"),
    (a_job_of("8", 8), "--pe slurm 8, 8 on each node: the allocation rule 8 puts 8 slots on each node: 8 slots would "
                       "take 1 nodes of 8 CPUs or more, and 0 are there"),
    (a_job_of("4", 0), "--pe slurm 4, 0 on each node: the slots on each node must be from 1 to 9999999, not 0"),
    (a_job_of("4", 2, gres=["gpu:1"]), "--pe slurm 4, 2 on each node: the allocation rule 2 puts 2 slots on each "
                                       "node: 4 slots would take 2 nodes, and a job runs on one node"),
    (JobSubmission(script="true\n", workdir="/w", pe_per_node=2), "slots without a parallel environment"),
])
def test_a_bad_slot_count_on_each_node_is_refused(job: JobSubmission, message: str) -> None:
    with pytest.raises(BadRequest) as refused:
        checked(job, PES, "alice", [4, 4, 2])
    assert str(refused.value).startswith(message), str(refused.value)
