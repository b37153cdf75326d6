"""A parallel environment's slots are a cluster-wide cap (sge_pe(5) slots: "The number of parallel
processes being allowed to run in total under the parallel environment concurrently"): the
planner never gives out more, says why a job waits for them, and lets the jobs behind it start."""

from __future__ import annotations

from tests.helpers.nodes import a_node

from drover.core.arrays import TaskIndices
from drover.core.resources import Resources
from drover.scheduler.plan import plan
from drover.scheduler.reasons import PendingReason
from drover.scheduler.snapshot import PendingIndices, PendingWork

NOW = 1000.0


def a_pe_job(number: int, slots: int, pe: str | None = "mpi") -> PendingWork:
    return PendingWork(number, "alice", 0, float(number), Resources(slots, 0), PendingIndices((), TaskIndices(), 0),
                       name=f"job{number}", pe=(pe, slots) if pe else None)


def test_sge_pe_slots_cap_the_slots_in_use_across_the_cluster() -> None:
    work = [a_pe_job(1, 4), a_pe_job(2, 4), a_pe_job(3, 2), a_pe_job(4, 4, pe=None)]
    result = plan(work, [a_node("n1", cpus=8), a_node("n2", cpus=8)], NOW, pe_slots={"mpi": 6})
    assert sorted(start.job for start in result.starts) == [1, 3, 4]  # 4 + 2 of 6; the plain job is not counted
    assert result.pending_reasons == {2: PendingReason.PE_SLOTS}
    assert result.details[2] == "waiting for slots of parallel environment mpi: 4 a task, 2 of its slots free"


def test_a_job_of_a_pe_that_is_gone_says_so() -> None:
    result = plan([a_pe_job(1, 2, pe="old")], [a_node("n1", cpus=8)], NOW, pe_slots={"mpi": 6})
    assert result.pending_reasons == {1: PendingReason.PE_SLOTS}
    assert "the cluster has no parallel environment old" in result.details[1]
