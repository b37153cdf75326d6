"""The planner's inputs: plain, frozen data built by the controller from its working set."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from drover.core.arrays import TaskIndices
from drover.core.constraints import Constraint
from drover.core.gres import Device, GresNeed
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
    releases: tuple[Release, ...] = ()
    devices: tuple[Device, ...] = ()  # all its generic resources (GPUs...)
    free_devices: frozenset[Device] = frozenset()  # those no task holds
    features: frozenset[str] = frozenset()  # what --constraint matches
    running: int = 0  # tasks holding room there (an --exclusive task needs a node with none)
    load: float = 0.0  # its load average, from its heartbeats: breaks ties between equally used nodes
    # What the running tasks hold beyond `total` (the node came back with fewer CPUs or less
    # memory than they were given): the first of `releases` pay it back before anything is free.
    overdrawn: Resources = Resources()
    # The running attempts whose room a waiting task may be promised (scheduler/promises.py).
    successions: tuple[Succession, ...] = ()
    # When the node goes away (an outer scheduler's allocation ends): a task starts here only if
    # its run limit ends by then, so a task without a limit never does. math.inf: it stays.
    ends_at: float = math.inf


@dataclass(frozen=True, slots=True)
class Succession:
    """A running attempt on a node that no promised attempt follows yet, whose room (its CPUs
    and memory) a task may be given to start in the moment it ends."""

    attempt: str  # "<job>.<task>.<attempt>"; "" for one the same pass starts (`start`)
    cpu_ids: tuple[int, ...]
    memory_mib: int
    ends_at: float  # its start plus its run limit; math.inf without one
    start: tuple[int, int] | None = None  # the job and task of a start of this very pass


@dataclass(frozen=True, slots=True)
class Stranded:
    """A promised task whose room is free beside it on its node now, while the attempt it
    follows still runs (another attempt there ended first): it may start there at once, in
    place, if the pass finds nothing before it in the planner's order waiting for room
    (plan.py). Its job's fields that place it in that order, and what it needs there."""

    job: int
    index: int
    node: str
    resources: Resources
    owner: str
    priority: int
    submitted_at: float
    queue_priority: int = 0
    run_limit_s: float | None = None  # how long it runs at most (its time limit and kill grace)
    queue: str = "default"  # its job's queue: stopped or outside its window, it starts nothing
    constraint: Constraint | None = None  # node features its node must still have


@dataclass(frozen=True, slots=True)
class Release:
    """What a running task holds on a node, and when it gives it back at the latest."""

    at: float  # its start plus its run limit; math.inf without a limit
    resources: Resources
    devices: frozenset[Device] = frozenset()
    whole_node: bool = False  # an --exclusive task: the node takes nothing else until it ends


@dataclass(frozen=True, slots=True)
class QueueView:
    """A queue as the planner sees it in one cycle: may it start jobs, where, and how many."""

    name: str
    starting: bool = True  # False: stopped (`drover queue stop`): jobs wait, none start
    opens_at: float | None = None  # its time window is closed now and opens then
    nodes: frozenset[str] | None = None  # the nodes its jobs may run on; None: every node
    in_error: frozenset[str] = frozenset()  # the nodes where it is in error (queue@node): not in `nodes`
    suspended: frozenset[str] = frozenset()  # the nodes where it is suspended (queue@node): not in `nodes`
    max_running: int | None = None  # tasks of the queue running at once
    max_running_per_user: int | None = None  # tasks of one user in the queue running at once
    running: int = 0  # tasks of the queue running now
    running_by_user: Mapping[str, int] = field(default_factory=dict)


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
    # How many tasks wait: computed once (the planner asks for it of every job, every pass).
    count: int = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "count", len(self.requeued) + self.fresh_count)

    @property
    def fresh_count(self) -> int:
        if self.fresh_held:
            return 0
        return max(self.indices.count - self.fresh_from - len(self.fresh_skip), 0)

    def iterate(self) -> Iterator[int]:
        """Every pending index in start order, lazily: the requeued, then the never-dispatched."""
        yield from self.requeued
        if not self.fresh_held:
            skip = self.fresh_skip
            for index in self.indices.from_position(self.fresh_from):
                if index not in skip:
                    yield index

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
    queue: str = "default"
    gres: tuple[GresNeed, ...] = ()  # generic resources each task needs on its node
    licenses: tuple[tuple[str, int], ...] = ()  # cluster-wide counters each task holds while it runs
    constraint: Constraint | None = None  # node features its nodes must have
    exclusive: bool = False  # each task has a node to itself
    pe: tuple[str, int] | None = None  # its parallel environment and the slots each task holds of it
    # Its PE's allocation rule, when its slots may go on several nodes (plan.py gives each start
    # its other nodes, Start.others); $pe_slots, the default, keeps every task on one node.
    pe_rule: str | int = "$pe_slots"
