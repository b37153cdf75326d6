"""How Slurm lays a job's tasks on its nodes, and its compact notations for saying so: a list of
hosts ("n1,n2,n3,m" → "n[1-3],m"), a list of counts ("2,2,2,1" → "2(x3),1", as
SLURM_TASKS_PER_NODE and SLURM_JOB_CPUS_PER_NODE give them), and how many of N tasks each node
takes. Pure, standard library only, at the level of drover.records: the shepherd, which imports
nothing of the core, writes a job's SLURM_* variables with it, and srun lays out its steps."""

from __future__ import annotations

import re


def compress_hosts(names: list[str]) -> str:
    """Names in Slurm's compact form, keeping their order: runs of the same prefix whose numbers
    rise become one bracket group ("n1,n2,n3,m" → "n[1-3],m"; "n2,n1" stays "n2,n1")."""
    groups: list[tuple[str, list[str]]] = []
    for name in names:
        match = re.fullmatch(r"(.*?)(\d+)", name)
        prefix, number = (match.group(1), match.group(2)) if match else (name, "")
        # A number joins its group only above the last one: a master-first "n2,n1" stays as it is
        # (a bracket group reads in ascending order, and the order is the tasks' layout).
        if number and groups and groups[-1][0] == prefix and groups[-1][1] and int(number) > int(groups[-1][1][-1]):
            groups[-1][1].append(number)
        else:
            groups.append((prefix, [number] if number else []))
    out = []
    for prefix, numbers in groups:
        if not numbers:
            out.append(prefix)
        elif len(numbers) == 1:
            out.append(prefix + numbers[0])
        else:
            out.append(f"{prefix}[{_ranges(numbers)}]")
    return ",".join(out)


def compress_counts(counts: list[int]) -> str:
    """Counts per node as Slurm writes them: a run of equal ones as `N(xK)` ("2(x3),1")."""
    runs: list[list[int]] = []  # [count, how many nodes in a row]
    for count in counts:
        if runs and runs[-1][0] == count:
            runs[-1][1] += 1
        else:
            runs.append([count, 1])
    return ",".join(str(count) if times == 1 else f"{count}(x{times})" for count, times in runs)


def tasks_per_node(slots: list[int], ntasks: int) -> list[int]:
    """How many of `ntasks` tasks each node takes, given the tasks each can hold (its CPUs over
    the CPUs per task), in the order of the nodes: Slurm's default block distribution counts
    them as a cyclic one would, a task to each node with room in turn, so that every node gets
    some before any is full (slurm_step_layout.c, _task_layout_block); the tasks are then
    numbered node after node. Past the room of them all, the turns go on over every node."""
    counts = [0] * len(slots)
    placed, over = 0, False
    while placed < ntasks and slots:
        room = False
        for node, held in enumerate(slots):
            if placed == ntasks:
                break
            if counts[node] < held or over:
                counts[node] += 1
                placed += 1
                room = room or counts[node] < held
        over = over or not room
    return counts


def _follows(number: str, previous: str) -> bool:
    """`number` continues a range that ends at `previous`. Widths must agree, unless neither is
    zero-padded: Slurm's hostlist.c (_width_equiv) writes n9,n10 as n[9-10] but n09,n10 as
    n[09-10] and n9,n010 as n[9,010]."""
    if int(number) != int(previous) + 1:
        return False
    return len(number) == len(previous) or (_unpadded(number) and _unpadded(previous))


def _unpadded(number: str) -> bool:
    return number == str(int(number))


def _ranges(numbers: list[str]) -> str:
    parts: list[str] = []
    start = previous = numbers[0]
    for number in numbers[1:]:
        if _follows(number, previous):
            previous = number
            continue
        parts.append(start if start == previous else f"{start}-{previous}")
        start = previous = number
    parts.append(start if start == previous else f"{start}-{previous}")
    return ",".join(parts)
