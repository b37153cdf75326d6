"""Allocation queues and their allocations are kept by the store (migration 0023), on both
backends: a controller that starts again on it knows its queues, their back-off and last error,
and the allocations still live in the outer scheduler."""

from __future__ import annotations

from dataclasses import replace

from drover.core.allocations import Allocation, AllocationState, QueueParams, failed
from drover.store.base import open_store
from drover.store.sql_store import SqlStore

NOW = 1_790_000_000.0


def test_queues_and_allocations_outlive_the_store_being_opened_again(store_url: str) -> None:
    store = open_store(store_url)
    assert isinstance(store, SqlStore)
    params = QueueParams("slurm", 1800.0, 2, 6, 3, 60.0, "debug", ("--account=p", "--qos=low"), "night")
    first = store.add_alloc_queue(params, NOW, "alice")
    second = store.add_alloc_queue(QueueParams(), NOW + 1, "bob")
    assert (first.id, second.id) == (1, 2)
    store.save_alloc_queue(replace(failed(first, "sbatch: error: invalid partition", NOW + 2), paused=True))
    store.save_allocation(Allocation(1, "4711", 2, AllocationState.QUEUED, NOW + 3, "tok1"))
    store.save_allocation(Allocation(1, "4711", 2, AllocationState.RUNNING, NOW + 3, "tok1", NOW + 9, None, "joined"))
    store.save_allocation(Allocation(2, "4712", 1, AllocationState.FAILED, NOW + 4, None, None, NOW + 5, "never"))
    store.close()

    again = open_store(store_url)
    assert isinstance(again, SqlStore)
    queues = again.alloc_queues()
    assert [queue.id for queue in queues] == [1, 2]
    kept = queues[0]
    assert kept.params == params and kept.created_by == "alice" and kept.paused and not kept.removed
    assert kept.failures == 1 and kept.backoff_until == NOW + 12 and kept.last_error == "sbatch: error: invalid partition"
    assert again.allocations(1) == [Allocation(1, "4711", 2, AllocationState.RUNNING, NOW + 3, "tok1", NOW + 9, None,
                                               "joined")]
    assert [item.state for item in again.allocations()] == [AllocationState.RUNNING, AllocationState.FAILED]
    again.close()
