"""cgroup v1: one cpuset per set of CPUs, made once and kept for every attempt given those CPUs.

Moving a process into a cpuset cgroup made a moment before costs the kernel 0.5 to 1.5 ms on
this kind of host, against 0.03 ms for a cpuset that has had tasks before; making it and
pinning it cost as much again. A cpuset holds nothing of an attempt but its CPUs and memory
nodes: no counter, no limit that depends on anything but the CPUs, which its name says
(`drover-<cluster>/slot-0-3` for CPUs 0 to 3). So an attempt given CPUs that an earlier attempt
had takes that attempt's cpuset as it is, and the node's slots keep theirs between attempts.

A slot's cpuset is taken only when it is empty (cgroup.procs: no process of an earlier attempt
left in it, and none of another attempt given the same CPUs); otherwise the attempt gets a cpuset
of its own, named after it, as every attempt did before, and removed with its other cgroups.
The controllers that count (memory: peak and out-of-memory kills; pids: refused forks; cpuacct;
the freezer's state; devices' rules) stay one cgroup per attempt: memory.oom_control's oom_kill
and pids.events' max cannot be reset, and an attempt's usage must be its own.

A slot's cpuset is never removed by an attempt: the node daemon removes the empty ones when it
stops (common.remove_cluster_parents), and a node daemon's lost-shepherd clean-up never touches
it (lost_shepherd.py acts on the attempt's own cgroups only).
"""

from __future__ import annotations

import os

from drover.shepherd.containment.common import make_dir, read

PREFIX = "slot-"


def slot_path(home: str, attempt_group: str, cpus: frozenset[int] | set[int] | None) -> str:
    """The cpuset of the slot of `cpus` (None: all the cluster's CPUs) beside the attempt's own
    cgroup `attempt_group` (common.group_name) in the cpuset hierarchy at `home`."""
    from drover.shepherd.spool_files import cpu_list

    name = PREFIX + (cpu_list(cpus).replace(",", "_") if cpus else "all")
    return os.path.join(home, os.path.dirname(attempt_group), name)


def take(path: str) -> tuple[str, bool] | None:
    """The slot's cpuset at `path` and whether it was made just now; None where it holds a
    process (the attempt then makes a cpuset of its own) or cannot be made."""
    if os.path.isdir(path):
        procs = read(os.path.join(path, "cgroup.procs"))
        return (path, False) if procs is not None and not procs.strip() else None
    made = make_dir(os.path.dirname(path), os.path.basename(path), fresh=False)
    return (made, True) if made is not None else None


def pinned(path: str, cpus: frozenset[int] | set[int] | None) -> bool:
    """Whether the slot's cpuset has its memory nodes and its CPUs (`cpus`; None: any)."""
    from drover.shepherd.spool_files import cpu_list

    mems = (read(os.path.join(path, "cpuset.mems")) or "").strip()
    have = (read(os.path.join(path, "cpuset.cpus")) or "").strip()
    return bool(mems) and bool(have) and (cpus is None or have == cpu_list(cpus))
