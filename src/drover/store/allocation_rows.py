"""The store's rows of allocation queues and their allocations (`drover alloc`,
core/allocations.py): a part of SqlStore, which the controller's allocator writes through."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from typing import Any

from drover.core.allocations import Allocation, AllocationState, AllocQueue, QueueParams
from drover.store.faults import StoreFault, translated


def _queue(row: tuple[Any, ...]) -> AllocQueue:
    raw = json.loads(row[1])
    raw["extra_args"] = tuple(raw.get("extra_args", ()))
    return AllocQueue(int(row[0]), QueueParams(**raw), row[2], row[3], bool(row[4]), bool(row[5]), int(row[6]),
                      row[7], row[8], row[9])


def _allocation(row: tuple[Any, ...]) -> Allocation:
    return Allocation(int(row[0]), row[1], int(row[2]), AllocationState(row[3]), row[4], row[5], row[6], row[7],
                      row[8])


def params_text(params: QueueParams) -> str:
    return json.dumps({"manager": params.manager, "time_limit_s": params.time_limit_s,
                       "workers_per_alloc": params.workers_per_alloc, "max_workers": params.max_workers,
                       "backlog": params.backlog, "idle_timeout_s": params.idle_timeout_s,
                       "partition": params.partition, "extra_args": list(params.extra_args), "name": params.name},
                      sort_keys=True)


class AllocationRows:
    db: Any
    path: str
    needs_reopen: bool

    def transaction(self, batched: bool = False) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def reopen(self) -> None:
        raise NotImplementedError

    def fault(self, error: Exception) -> StoreFault | None:
        raise NotImplementedError

    @translated
    def add_alloc_queue(self, params: QueueParams, created_at: float, created_by: str) -> AllocQueue:
        with self.transaction() as db:
            row = db.execute("SELECT COALESCE(MAX(id), 0) FROM alloc_queues", ()).fetchone()
            queue = AllocQueue(int(row[0]) + 1, params, created_at, created_by)
            db.execute("INSERT INTO alloc_queues (id, params, created_at, created_by) VALUES (?, ?, ?, ?)",
                       (queue.id, params_text(params), created_at, created_by))
        return queue

    @translated
    def alloc_queues(self) -> list[AllocQueue]:
        return [_queue(row) for row in self.db.execute(
            "SELECT id, params, created_at, created_by, paused, removed, failures, backoff_until, last_error, "
            "last_error_at FROM alloc_queues ORDER BY id", ())]

    @translated
    def save_alloc_queue(self, queue: AllocQueue) -> None:
        with self.transaction() as db:
            db.execute("UPDATE alloc_queues SET paused=?, removed=?, failures=?, backoff_until=?, last_error=?, "
                       "last_error_at=? WHERE id=?",
                       (int(queue.paused), int(queue.removed), queue.failures, queue.backoff_until, queue.last_error,
                        queue.last_error_at, queue.id))

    @translated
    def allocations(self, queue_id: int | None = None) -> list[Allocation]:
        columns = "queue_id, outer_id, workers, state, submitted_at, token_id, started_at, ended_at, reason"
        if queue_id is None:
            rows = self.db.execute(f"SELECT {columns} FROM allocations ORDER BY submitted_at", ())
        else:
            rows = self.db.execute(f"SELECT {columns} FROM allocations WHERE queue_id=? ORDER BY submitted_at",
                                   (queue_id,))
        return [_allocation(row) for row in rows]

    @translated
    def save_allocation(self, item: Allocation) -> None:
        """Insert or update, by its queue and outer id."""
        with self.transaction() as db:
            db.execute("DELETE FROM allocations WHERE queue_id=? AND outer_id=?", (item.queue_id, item.outer_id))
            db.execute("INSERT INTO allocations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (item.queue_id, item.outer_id, item.workers, item.state.value, item.submitted_at,
                        item.token_id, item.started_at, item.ended_at, item.reason))
