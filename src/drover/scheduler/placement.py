"""Where a task fits in one planning pass: the nodes' free room, the least-loaded choice, and the
backfill reservation's arithmetic. Pure, and private to plan.py.

A `Rooms` is the planner's scratch copy of the nodes that take work. It keeps them in the order
a task should try them, least loaded first: the share of their CPUs that tasks hold, then their
load average (from heartbeats), then their name. A node with no free CPU leaves that order (no
task fits there), so a full cluster costs nothing to search. Choosing the least-loaded node
spreads work as jobd and Grid Engine's default load formula do; it also keeps whole nodes free
longest for --exclusive jobs only when the cluster is nearly empty (Slurm's packing would keep
them free longer, at the price of crowding a few nodes; this choice favours the jobs running).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from drover.core.gres import Device, GresNeed, allocate
from drover.core.resources import Resources
from drover.scheduler.snapshot import NodeView, Release

NO_DEVICES: frozenset[Device] = frozenset()


@dataclass(frozen=True, slots=True)
class Need:
    """What one task of a job takes from a node."""

    resources: Resources
    gres: tuple[GresNeed, ...] = ()
    exclusive: bool = False


@dataclass(frozen=True, slots=True)
class Reservation:
    job: int
    node: str
    at: float  # the time its next task can start there at the latest
    resources: Resources


@dataclass(slots=True)
class Spare:
    """What the reserved node has at the reservation's start beyond what the reserved task needs:
    all a task that would still run then may use there."""

    resources: Resources
    devices: frozenset[Device]

    def holds(self, need: Need) -> bool:
        return (not need.exclusive and need.resources.fits_in(self.resources)
                and allocate(need.gres, self.devices) is not None)

    def take(self, resources: Resources, devices: frozenset[Device]) -> None:
        self.resources = self.resources - resources
        self.devices = self.devices - devices


@dataclass(slots=True)
class Room:
    """A node's free room during one pass."""

    name: str
    total: Resources
    free: Resources
    free_cpu_ids: list[int]
    devices: tuple[Device, ...]
    free_devices: frozenset[Device]
    features: frozenset[str]
    running: int
    load: float
    releases: list[Release]
    overdrawn: Resources = Resources()  # held by running tasks beyond `total`: paid back first
    ends_at: float = math.inf  # the node goes away then: what starts here must end by then

    def lasts(self, ends: float) -> bool:
        """Whether a task that would end at `ends` (math.inf: never) ends before the node goes."""
        return ends <= self.ends_at

    @property
    def key(self) -> tuple[float, float, str]:
        used = 1.0 - len(self.free_cpu_ids) / self.total.cpus if self.total.cpus else 1.0
        return (used, self.load, self.name)

    def fits(self, need: Need) -> dict[str, tuple[int, ...]] | None:
        """The devices the task would get here ({} for none), or None when it does not fit now."""
        cpus = self.total.cpus if need.exclusive else need.resources.cpus
        if len(self.free_cpu_ids) < cpus or need.resources.memory_mib > self.free.memory_mib:
            return None
        if need.exclusive and self.running:
            return None
        if not need.gres:
            return {}
        return allocate(need.gres, self.free_devices)

    def could_ever_hold(self, need: Need) -> bool:
        """Whether the node, empty, has room for the task."""
        return need.resources.fits_in(self.total) and (not need.gres or allocate(need.gres, self.devices) is not None)

    def take(self, need: Need, gres: Mapping[str, tuple[int, ...]], ends: float) -> tuple[tuple[int, ...], Resources,
                                                                                         frozenset[Device]]:
        """Give the task its CPUs (all of them, exclusive), memory and devices; what it took."""
        cpus = len(self.free_cpu_ids) if need.exclusive else need.resources.cpus
        cpu_ids = tuple(self.free_cpu_ids[:cpus])
        del self.free_cpu_ids[:cpus]
        taken = Resources(cpus, need.resources.memory_mib)
        self.free = self.free - taken
        devices = frozenset(device for device in self.free_devices if device.index in gres.get(device.name, ()))
        self.free_devices = self.free_devices - devices
        self.running += 1
        self.releases.append(Release(ends, taken, devices, need.exclusive))
        return cpu_ids, taken, devices


class Rooms:
    """The nodes that take work, in the order a task tries them (least loaded first)."""

    def __init__(self, nodes: Iterable[NodeView]) -> None:
        self.all: dict[str, Room] = {}
        for node in sorted(nodes, key=lambda view: view.name):
            if node.state.accepts_work:
                # The free CPU ids and the free count are one: the ids the node has, as many as
                # are free. A pass plans on that whatever the view says, so a node that changed
                # under running work (fewer CPUs than they hold) never gives out what it has not.
                cpu_ids = sorted(cpu for cpu in node.free_cpu_ids if 0 <= cpu < node.total.cpus)[:max(node.free.cpus, 0)]
                free = Resources(len(cpu_ids), max(node.free.memory_mib, 0))
                self.all[node.name] = Room(
                    node.name, node.total, free, cpu_ids, node.devices, node.free_devices, node.features,
                    node.running, node.load, list(node.releases), node.overdrawn, node.ends_at)
        # The latest any node goes away (math.inf: some node stays): a task that would run past it
        # fits nowhere, ever, and waits without holding up the tasks behind it.
        self.last_end = max((room.ends_at for room in self.all.values()), default=math.inf)
        self._order = sorted((room for room in self.all.values() if room.free_cpu_ids), key=lambda room: room.key)
        self._keys = [room.key for room in self._order]

    def __bool__(self) -> bool:
        return bool(self.all)

    def candidates(self) -> Iterable[Room]:
        return iter(self._order)

    def placed(self, room: Room, old_key: tuple[float, float, str]) -> None:
        """The room gave some of itself to a task: move it to its new place in the order."""
        at = bisect.bisect_left(self._keys, old_key)
        del self._order[at], self._keys[at]
        if room.free_cpu_ids:
            key = room.key
            at = bisect.bisect_left(self._keys, key)
            self._order.insert(at, room)
            self._keys.insert(at, key)


def place(need: Need, rooms: Rooms, allowed: frozenset[str] | None, reservation: Reservation | None, ends: float,
          spare: Spare | None) -> tuple[Room, dict[str, tuple[int, ...]]] | None:
    """The least-loaded eligible room where the task fits now, with the devices it would get.
    Behind a reservation, a task that would still run at its start may use the reserved node
    only within what the reserved task leaves there (`spare`)."""
    for room in rooms.candidates():
        if allowed is not None and room.name not in allowed:
            continue
        gres = fit(need, room, reservation, ends, spare)
        if gres is not None:
            return room, gres
    return None


def fit(need: Need, room: Room, reservation: Reservation | None, ends: float,
        spare: Spare | None) -> dict[str, tuple[int, ...]] | None:
    """The devices the task would get on this room now ({} for none), or None where it may not
    start there now: it does not fit, it would outlast the node, or, behind a reservation on
    this node, it would still run at the reservation's start and needs more than the reserved
    task leaves there (`spare`)."""
    if not room.lasts(ends):
        return None
    gres = room.fits(need)
    if gres is None:
        return None
    if reservation is not None and room.name == reservation.node and ends > reservation.at:
        if spare is None or not spare.holds(need):
            return None
        # Its devices come from those the reserved task leaves, not just the lowest free.
        return allocate(need.gres, room.free_devices & spare.devices)
    return gres


def take(need: Need, room: Room, rooms: Rooms, gres: Mapping[str, tuple[int, ...]], ends: float,
         reservation: Reservation | None, spare: Spare | None) -> tuple[int, ...]:
    """Give the task its room where `fit` found it may start: what it takes leaves the room's
    place in the order, and, on the reserved node, the spare where it would still run at the
    reservation's start. Its CPUs."""
    key = room.key
    cpu_ids, taken, devices = room.take(need, gres, ends)
    rooms.placed(room, key)
    if reservation is not None and room.name == reservation.node and ends > reservation.at:
        assert spare is not None  # fit() let it on the reserved node only within the spare
        spare.take(taken, devices)
    return cpu_ids


def reserve(job: int, need: Need, rooms: Rooms, allowed: frozenset[str] | None,
            now: float, run_s: float = math.inf) -> tuple[Reservation, Spare] | None:
    """The earliest time and node (then the least loaded) at which the task fits, as the tasks
    there end at their limits; with what that node has beyond the task then. None if no node
    ever has room (some task there has no limit). `run_s`: how long the task runs at most; a
    node that goes away before it would end is no place to reserve."""
    best: tuple[float, tuple[float, float, str], Room, Spare] | None = None
    for room in rooms.all.values():
        if (allowed is not None and room.name not in allowed) or not room.could_ever_hold(need):
            continue
        found = _when(room, need, now)
        if found is None:
            continue
        at, spare = found
        if not room.lasts(at + run_s):
            continue
        if best is None or (at, room.key) < (best[0], best[1]):
            best = (at, room.key, room, spare)
    if best is None:
        return None
    at, _, room, spare = best
    return Reservation(job, room.name, at, need.resources), spare


def _when(room: Room, need: Need, now: float) -> tuple[float, Spare] | None:
    free = Resources(len(room.free_cpu_ids), room.free.memory_mib)
    owed = room.overdrawn
    devices = room.free_devices
    running = room.running
    at = now
    for release in sorted(room.releases, key=lambda item: item.at):
        if _fits_then(need, free, devices, running, room.total):
            break
        if release.at == math.inf:
            return None
        # What the node holds beyond its count comes back first, to nothing.
        paid = Resources(min(owed.cpus, release.resources.cpus), min(owed.memory_mib, release.resources.memory_mib))
        owed = owed - paid
        free = free + release.resources - paid
        devices, running, at = devices | release.devices, running - 1, max(release.at, now)
    if not _fits_then(need, free, devices, running, room.total):
        return None
    if need.exclusive:
        return at, Spare(Resources(), NO_DEVICES)
    gres = allocate(need.gres, devices) or {}
    taken = frozenset(device for device in devices if device.index in gres.get(device.name, ()))
    return at, Spare(free - need.resources, devices - taken)


def _fits_then(need: Need, free: Resources, devices: frozenset[Device], running: int, total: Resources) -> bool:
    if need.exclusive:
        return running <= 0 and free.cpus >= total.cpus and need.resources.memory_mib <= free.memory_mib
    return need.resources.fits_in(free) and (not need.gres or allocate(need.gres, devices) is not None)
