"""A parallel job's slots placed on several nodes in one planning pass: spread.py's rule applied
to the pass's rooms, and the CPUs taken on each node. Pure, and private to plan.py.

Each slot is a CPU and its share of the job's memory (the job's memory is counted for all its
slots). The first node is the master: it runs the job script (Grid Engine's master task); the
others hold the job's room for the tasks it starts there.
"""

from __future__ import annotations

from drover.core.resources import Resources
from drover.scheduler.placement import Need, Room, Rooms
from drover.scheduler.spread import Spread, free_slots, spread

Taken = tuple[tuple[str, tuple[int, ...]], ...]  # (node, CPU ids) pairs, the master first


def mib_a_slot(resources: Resources) -> int:
    return -(-resources.memory_mib // resources.cpus) if resources.cpus else resources.memory_mib


def _pool(rooms: Rooms, allowed: frozenset[str] | None, kept: str | None, ends: float) -> list[Room]:
    return [room for room in rooms.candidates()
            if (allowed is None or room.name in allowed) and room.name != kept and room.lasts(ends)]


def place_spread(rule: str | int, resources: Resources, rooms: Rooms, allowed: frozenset[str] | None,
                 kept: str | None = None, ends: float = 0.0) -> Spread | None:
    """Where the job's slots (`resources.cpus`) go now under `rule`, among the eligible rooms in
    the planner's order (least loaded first), leaving out `kept` (a node reserved for an earlier
    job that this one would outlast) and the nodes that go away before `ends` (when the job
    would end at the latest). None when they do not fit now."""
    per = mib_a_slot(resources)
    free = [(room.name, free_slots(len(room.free_cpu_ids), room.free.memory_mib, per))
            for room in _pool(rooms, allowed, kept, ends)]
    return spread(rule, resources.cpus, free)


def could_ever_spread(rule: str | int, resources: Resources, rooms: Rooms, allowed: frozenset[str] | None) -> bool:
    """Whether the eligible nodes, empty, could hold the job's slots under `rule`."""
    per = mib_a_slot(resources)
    names = sorted(rooms.all) if allowed is None else sorted(name for name in rooms.all if name in allowed)
    free = [(name, free_slots(rooms.all[name].total.cpus, rooms.all[name].total.memory_mib, per)) for name in names]
    return spread(rule, resources.cpus, free) is not None


def take_spread(chosen: Spread, resources: Resources, rooms: Rooms, ends: float) -> Taken:
    """Give the job its CPUs and memory on each chosen node; the CPU ids it got on each."""
    per = mib_a_slot(resources)
    taken: list[tuple[str, tuple[int, ...]]] = []
    for name, count in chosen:
        room = rooms.all[name]
        key = room.key
        cpu_ids, _, _ = room.take(Need(Resources(count, count * per)), {}, ends)
        rooms.placed(room, key)
        taken.append((name, cpu_ids))
    return tuple(taken)
