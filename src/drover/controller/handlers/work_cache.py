"""The planner's input, kept between passes: each waiting job's PendingWork and the jobs in the
planner's order, built again only for the jobs that changed.

Every change to a job goes through a handler's outcome, so after each commit the service says
which jobs it touched (`touched`). A job's pending work also depends on other jobs: on those it
depends on (rebuilt with them, through `dependents`) and, for a singleton, on every job of its
owner and name (singletons are rebuilt whenever any job changed: they are few). What changes
every job's work (a queue's priority; a working set reloaded from the store) asks for all of
them again (`rebuild_all`).

With the default weights a job's place in the order (its own priority, then submission time and
id) changes only when the job does, so the order is kept sorted as jobs come and go, and a pass
walks it without sorting. A multifactor order moves with time (age, usage) and is sorted by the
planner on each pass.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from drover.scheduler.plan import order_key
from drover.scheduler.snapshot import PendingWork

OrderKey = tuple[int, float, int]


@dataclass(slots=True)
class WorkCache:
    items: dict[int, PendingWork] = field(default_factory=dict)
    order: list[OrderKey] = field(default_factory=list)  # order_key of each item, sorted (the job id is last)
    dirty: set[int] = field(default_factory=set)  # jobs to build again before the next pass
    everything: bool = True  # build every job again
    dependents: dict[int, set[int]] = field(default_factory=dict)  # job → the waiting jobs that depend on it
    depends_on: dict[int, frozenset[int]] = field(default_factory=dict)
    singletons: set[int] = field(default_factory=set)
    last_full: float = float("-inf")  # when the last full pass ran
    partial: bool = False  # a quick pass stopped early since: some jobs' reasons wait for the next full pass

    def touched(self, job_ids: Iterable[int]) -> None:
        self.dirty.update(job_ids)

    def rebuild_all(self) -> None:
        self.everything = True

    def refresh(self, job_ids: Iterable[int], build: Callable[[int], tuple[PendingWork | None, frozenset[int], bool]]
                ) -> None:
        """Build the pending work of the jobs that need it: all of `job_ids` (the working set's)
        after rebuild_all, else those touched, their dependents and the singletons. `build`
        gives a job's work (None: nothing of it waits), the jobs it depends on, and whether it
        is a singleton."""
        if self.everything:
            self.items.clear()
            self.order.clear()
            self.dependents.clear()
            self.depends_on.clear()
            self.singletons.clear()
            wanted: Iterable[int] = list(job_ids)
        else:
            wanted = set(self.dirty)
            for job_id in self.dirty:
                wanted |= self.dependents.get(job_id, set())
            if self.dirty:
                wanted |= self.singletons
        self.dirty.clear()
        self.everything = False
        for job_id in wanted:
            self._forget(job_id)
            item, depends_on, singleton = build(job_id)
            if depends_on:
                self.depends_on[job_id] = depends_on
                for other in depends_on:
                    self.dependents.setdefault(other, set()).add(job_id)
            if singleton:
                self.singletons.add(job_id)
            if item is not None:
                self.items[job_id] = item
                bisect.insort(self.order, order_key(item))

    def _forget(self, job_id: int) -> None:
        item = self.items.pop(job_id, None)
        if item is not None:
            key = order_key(item)
            at = bisect.bisect_left(self.order, key)
            if at < len(self.order) and self.order[at] == key:
                del self.order[at]
        for other in self.depends_on.pop(job_id, frozenset()):
            waiting = self.dependents.get(other)
            if waiting is not None:
                waiting.discard(job_id)
                if not waiting:
                    del self.dependents[other]
        self.singletons.discard(job_id)

    def in_order(self) -> list[PendingWork]:
        """The items in the planner's order (order_key)."""
        items = self.items
        return [items[key[2]] for key in self.order]

    def check(self) -> None:
        """Raise AssertionError if the order and the items disagree (tests call this)."""
        assert sorted(order_key(item) for item in self.items.values()) == self.order, "work order is off"
