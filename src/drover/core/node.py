"""A node as the controller knows it. Its state changes only through `Node.apply`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from drover.core.gres import Device
from drover.core.node_state import NodeState, NodeTrigger, next_node_state
from drover.core.resources import Resources


@dataclass(slots=True)
class Node:
    name: str
    cpus: int
    memory_mib: int
    state: NodeState
    registered_at: float
    last_seen: float | None = None
    reason: str | None = None  # why the node is in ERROR (or drained)
    drain: str | None = None  # an operator drained it, and why: kept across disconnects until resumed
    devices: tuple[Device, ...] = ()  # its generic resources (GPUs...), as its hello said
    features: frozenset[str] = frozenset()  # what --constraint matches, as its hello said
    # Its queue instances in error (Grid Engine's queue@node in state E): queue → why. A failing
    # prolog, epilog or PE method of a job of that queue set it; its jobs start here no more,
    # other queues' still do, until an operator clears it (`drover node resume NODE --queue Q`).
    queue_errors: dict[str, str] = field(default_factory=dict)
    # Its queue instances suspended (Grid Engine's queue@node in state s): queue → by whom and why.
    # Their running jobs are frozen and none of theirs starts here until they are unsuspended
    # (`drover queue unsuspend Q@NODE`); other queues' jobs are not touched.
    suspended_queues: dict[str, str] = field(default_factory=dict)
    used_cpu_ids: set[int] = field(default_factory=set)  # derived from live attempts, not stored
    used_devices: set[Device] = field(default_factory=set)
    # The attempts holding room here, (job, task, attempt): what a planning pass walks for their
    # ends and usage, rather than every attempt of the working set.
    holders: set[tuple[int, int, int]] = field(default_factory=set)
    used_memory_mib: int = 0
    running: int = 0
    # From the node's heartbeats, in memory only: how busy its host is, and when it last spoke.
    load: float | None = None
    memory_free_mib: int | None = None
    heard_at: float | None = None
    # When the node goes away for good (a node inside an outer scheduler's allocation, from its
    # hello): no task starts here that would still run then. None: it stays.
    ends_at: float | None = None
    # From its hello, in memory only (kept across a reload of the working set while the node
    # stays connected: said_hello_as): it takes StartPromisedNow (a node daemon of an earlier
    # version does not; a promise stranded there is taken back instead: handlers/promises.py).
    starts_in_place: bool = False

    def apply(self, trigger: NodeTrigger) -> NodeState:
        self.state = next_node_state(self.state, trigger)
        return self.state

    def said_hello_as(self, other: Node) -> None:
        """What the node's hello said that the store does not hold, as `other` (the same node in
        a working set this one replaces) heard it: its node daemon is the one still connected,
        and says it again only at its next hello."""
        self.ends_at, self.starts_in_place = other.ends_at, other.starts_in_place

    @property
    def total(self) -> Resources:
        return Resources(self.cpus, self.memory_mib)

    # A node's CPUs and memory may change under running work: its hello after a restart says
    # what the host offers now (`drover up --cpus 8`, then `drover up` offering 2), while the
    # attempts that still run keep what they were given, CPU ids beyond the new count included.
    # What is free is then what the count leaves beyond all that is held, never less than none;
    # what the running attempts hold beyond the count is `overdrawn`, and is paid back first as
    # they end.

    @property
    def free(self) -> Resources:
        return Resources(
            max(self.cpus - len(self.used_cpu_ids), 0), max(self.memory_mib - self.used_memory_mib, 0)
        )

    @property
    def overdrawn(self) -> Resources:
        return Resources(
            max(len(self.used_cpu_ids) - self.cpus, 0), max(self.used_memory_mib - self.memory_mib, 0)
        )

    def free_cpu_ids(self) -> frozenset[int]:
        """The CPU ids a new attempt may take: the lowest of the node's ids that no attempt holds,
        as many as are free (when attempts hold ids beyond the count, fewer than are unheld)."""
        unheld = sorted(set(range(self.cpus)) - self.used_cpu_ids)
        return frozenset(unheld[:self.free.cpus])

    def free_devices(self) -> frozenset[Device]:
        return frozenset(self.devices) - self.used_devices

    def devices_of(self, gres: Mapping[str, Sequence[int]]) -> set[Device]:
        """The node's devices an attempt holds, from its name → indices."""
        return {device for device in self.devices if device.index in gres.get(device.name, ())} if gres else set()

    def take(self, cpu_ids: tuple[int, ...], memory_mib: int, gres: Mapping[str, Sequence[int]] | None = None,
             holder: tuple[int, int, int] | None = None) -> None:
        if holder is not None:
            self.holders.add(holder)
        self.used_cpu_ids.update(cpu_ids)
        self.used_memory_mib += memory_mib
        self.running += 1
        if gres:
            self.used_devices.update(self.devices_of(gres))

    def give_back(self, cpu_ids: tuple[int, ...], memory_mib: int, gres: Mapping[str, Sequence[int]] | None = None,
                  holder: tuple[int, int, int] | None = None) -> None:
        if holder is not None:
            self.holders.discard(holder)
        self.used_cpu_ids.difference_update(cpu_ids)
        self.used_memory_mib = max(self.used_memory_mib - memory_mib, 0)
        self.running = max(self.running - 1, 0)
        if gres:
            self.used_devices.difference_update(self.devices_of(gres))
