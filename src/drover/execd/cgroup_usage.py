"""What an attempt's cgroup says it uses now: memory, peak memory, CPU time, and its processes.

Read from the counters the kernel keeps per cgroup, which count every process the attempt ever
had (a child that exited and was reaped still counts in the CPU time), so they are preferred to
summing over processes. Only files are read: a sampling round costs no process and no fork.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from drover.records import ContainmentRecord

CGROUP_ROOT = "/sys/fs/cgroup/"


@dataclass(frozen=True, slots=True)
class CgroupFigures:
    memory_bytes: int | None  # None: the memory controller is not enabled for the cgroup
    peak_bytes: int | None  # memory.peak (v2, Linux 5.19+) or memory.max_usage_in_bytes (v1)
    cpu_s: float | None  # None: no CPU accounting for the cgroup
    pids: list[int] | None  # its processes; None: the cgroup is gone or cannot be listed


def read_cgroup(record: ContainmentRecord | None) -> CgroupFigures | None:
    """The figures of the attempt's cgroups, or None when it has none (the subreaper backend)."""
    if record is None:
        return None
    cgroups = {name: path for name, path in record["cgroups"].items() if path.startswith(CGROUP_ROOT)}
    if record["backend"] == "cgroup-v2" and "" in cgroups:
        return read_v2(cgroups[""])
    if record["backend"] == "cgroup-v1" and cgroups:
        return read_v1(cgroups)
    return None


def read_v2(path: str) -> CgroupFigures:
    usage_usec = _stat_value(os.path.join(path, "cpu.stat"), "usage_usec")
    return CgroupFigures(
        memory_bytes=_number(os.path.join(path, "memory.current")),
        peak_bytes=_number(os.path.join(path, "memory.peak")),
        cpu_s=usage_usec / 1e6 if usage_usec is not None else None,
        pids=_pids(os.path.join(path, "cgroup.procs")),
    )


def read_v1(paths: dict[str, str]) -> CgroupFigures:
    """`paths`: controller → the attempt's cgroup in that hierarchy."""
    memory, cpuacct = paths.get("memory"), paths.get("cpuacct")
    usage_ns = _number(os.path.join(cpuacct, "cpuacct.usage")) if cpuacct else None
    # Every hierarchy holds the same processes; the freezer is the one each v1 attempt has.
    listed = paths.get("freezer") or memory or next(iter(paths.values()))
    return CgroupFigures(
        memory_bytes=_number(os.path.join(memory, "memory.usage_in_bytes")) if memory else None,
        peak_bytes=_number(os.path.join(memory, "memory.max_usage_in_bytes")) if memory else None,
        cpu_s=usage_ns / 1e9 if usage_ns is not None else None,
        pids=_pids(os.path.join(listed, "cgroup.procs")),
    )


def read_file(path: str) -> str | None:
    # The cgroup is removed when the attempt ends, possibly between two reads of a round.
    try:
        with open(path) as file:
            return file.read()
    except OSError:
        return None


def _number(path: str) -> int | None:
    text = read_file(path)
    if text is None:
        return None
    text = text.strip()
    return int(text) if text.isdigit() else None


def _stat_value(path: str, key: str) -> int | None:
    for line in (read_file(path) or "").splitlines():
        word, _, value = line.partition(" ")
        if word == key and value.strip().isdigit():
            return int(value)
    return None


def _pids(path: str) -> list[int] | None:
    text = read_file(path)
    if text is None:
        return None
    return [int(word) for word in text.split() if word.isdigit()]
