"""The planner's inputs: plain, frozen data built by the controller from its working set."""

from __future__ import annotations

from dataclasses import dataclass

from drover.core.arrays import TaskIndices
from drover.core.node_state import NodeState
from drover.core.resources import Resources


@dataclass(frozen=True, slots=True)
class NodeView:
    """A node as the planner sees it in one cycle."""

    name: str
    state: NodeState
    total: Resources
    free: Resources
    free_cpu_ids: frozenset[int]
    # What the tasks running there hold and when it comes back: their start plus their run
    # limit (math.inf for a task without a limit). Used only for backfill reservations.
    releases: tuple[tuple[float, Resources], ...] = ()


@dataclass(frozen=True, slots=True)
class PendingIndices:
    """The pending task indices of one job, in the order they should start.

    `requeued` are tasks that exist as rows (requeued or released one by one); `fresh` are the
    array positions from `fresh_from` on that have never been dispatched, kept as a range.
    """

    requeued: tuple[int, ...] = ()
    indices: TaskIndices = TaskIndices()
    fresh_from: int = 0  # ascending position in `indices` of the first never-dispatched task
    fresh_held: bool = False  # the never-dispatched rest is held (user hold on the whole job)
    fresh_skip: frozenset[int] = frozenset()  # indices past fresh_from that have records already

    @property
    def fresh_count(self) -> int:
        if self.fresh_held:
            return 0
        return max(self.indices.count - self.fresh_from - len(self.fresh_skip), 0)

    @property
    def count(self) -> int:
        return len(self.requeued) + self.fresh_count

    def first(self, n: int) -> list[int]:
        out = list(self.requeued[:n])
        start = self.fresh_from
        while len(out) < n and not self.fresh_held:
            batch = self.indices.slice(start, n - len(out) + len(self.fresh_skip))
            if not batch:
                break
            start += len(batch)
            out.extend(index for index in batch if index not in self.fresh_skip)
        return out[:n]


@dataclass(frozen=True, slots=True)
class PendingWork:
    """The pending tasks of one job (one resource request per task)."""

    job: int
    owner: str
    priority: int
    submitted_at: float
    resources: Resources
    pending: PendingIndices
    running_count: int = 0  # tasks of this job holding resources now, for the array's %max
    max_running: int | None = None
    dependencies_met: bool = True
    dependencies_failed: bool = False  # a dependency ended badly: this job can never start
    waiting_for: str = ""  # what its dependencies wait for, or why they never will, in words
    blocked: frozenset[int] = frozenset()  # tasks whose own dependencies are not met (aftercorr)
    begin_at: float | None = None  # not started before this time
    name: str = ""
    singleton: bool = False  # at most one job of this owner and name runs at once
    queue_priority: int = 0  # its queue's `priority` ([queues.NAME]), for the multifactor priority
    run_limit_s: float | None = None  # how long a task of it runs at most (its time limit and kill grace)
