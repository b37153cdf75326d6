"""How a parallel environment's allocation rule spreads a job's slots over nodes (sge_pe(5)
allocation_rule). Pure, on plain data: node names and the slots each could give now.

The nodes come in the order a task should try them, most suitable first (the planner's order:
least loaded first). The answer is the nodes that get slots and how many each, the first being
the master node, which runs the job script (Grid Engine's master task); it is None when the
slots do not fit now. The rules, as sge_pe(5) describes them:

- `$pe_slots`: all the slots on one node ("the full range of processes ... has to be allocated
  on a single host").
- `$fill_up`: starting from the most suitable node, all its free slots are taken, then the next
  node's, as long as the job still needs slots.
- `$round_robin`: one slot from each suitable node in turn, starting again from the first when
  the job needs more slots than there are nodes.
- an integer N: exactly N slots on each node ("fixing the number of processes per host"); a job
  whose slots are no multiple of N never fits.

The controller gives each job of a PE its own slots on each node as an integer rule if it has
them (pe_per_node, sbatch -N), else its PE's rule (PendingWork.pe_rule);
docs/parallel-environments.md, "Allocation rules across nodes".
"""

from __future__ import annotations

from collections.abc import Sequence

from drover.core.parallel_env import FILL_UP, PE_SLOTS, ROUND_ROBIN

Spread = tuple[tuple[str, int], ...]  # (node, slots) pairs, the master node first


def spread(rule: str | int, slots: int, free: Sequence[tuple[str, int]]) -> Spread | None:
    """The nodes that get the job's `slots` under `rule`, and how many each, from `free` (each
    node's free slots now, most suitable first); None when they do not fit now."""
    if slots < 1:
        return None
    usable = [(name, count) for name, count in free if count > 0]
    if isinstance(rule, int):
        return _fixed(rule, slots, usable)
    if rule == PE_SLOTS:
        return next((((name, slots),) for name, count in usable if count >= slots), None)
    if rule == FILL_UP:
        return _fill_up(slots, usable)
    if rule == ROUND_ROBIN:
        return _round_robin(slots, usable)
    raise ValueError(f"unknown allocation rule {rule!r}")


def nodes_needed(rule: str | int, slots: int, largest_node: int) -> int | None:
    """The fewest nodes the rule could ever put the job on, nodes of `largest_node` CPUs each
    (None: never, an integer rule the slots are no multiple of, or a node too small)."""
    if isinstance(rule, int):
        return slots // rule if slots % rule == 0 and rule <= largest_node else None
    if rule == PE_SLOTS:
        return 1 if slots <= largest_node else None
    return -(-slots // largest_node) if largest_node > 0 else None


def free_slots(free_cpus: int, free_mib: int, mib_a_slot: int) -> int:
    """The slots a node could give now: a CPU each, and each slot's memory."""
    return free_cpus if mib_a_slot <= 0 else min(free_cpus, free_mib // mib_a_slot)


def _fixed(each: int, slots: int, usable: list[tuple[str, int]]) -> Spread | None:
    if each < 1 or slots % each:
        return None
    chosen = [(name, each) for name, count in usable if count >= each][:slots // each]
    return tuple(chosen) if len(chosen) == slots // each else None


def _fill_up(slots: int, usable: list[tuple[str, int]]) -> Spread | None:
    chosen: list[tuple[str, int]] = []
    left = slots
    for name, count in usable:
        if left == 0:
            break
        take = min(count, left)
        chosen.append((name, take))
        left -= take
    return tuple(chosen) if left == 0 else None


def _round_robin(slots: int, usable: list[tuple[str, int]]) -> Spread | None:
    if sum(count for _, count in usable) < slots:
        return None
    given = dict.fromkeys((name for name, _ in usable), 0)
    limits = dict(usable)
    left = slots
    while left:
        for name in given:
            if left and given[name] < limits[name]:
                given[name] += 1
                left -= 1
    return tuple((name, count) for name, count in given.items() if count)
