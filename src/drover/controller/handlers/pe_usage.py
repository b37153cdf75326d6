"""What a parallel job's tasks used, counted in its attempt's usage (as Slurm counts its steps'
usage in the job's): their CPU time is added to the master's, their memory peak is a peak like
any other (the largest). The attempt keeps one usage record, so `drover show`, `drover
history`, `qacct` and `sacct` count the tasks where they count the job script, and the store's
accounting row (made from the attempt's usage) counts them too.

Each task's usage is kept in its record (`Attempt.pe_tasks`) with a flag that says whether it is
in the attempt's usage yet: a task that ends while its attempt runs is counted when the
attempt's record is made; one that ends after it (the tasks stopped with the attempt) is added
to the attempt's record at once. Record and flag are committed together, so it is counted once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from drover.records import PeTaskRecord, Usage

# Counters that add up over processes (seconds, and counts); wall time and start and end are the
# master's.
SUMMED_SECONDS: tuple[Literal["user_cpu_s", "sys_cpu_s"], ...] = ("user_cpu_s", "sys_cpu_s")
SUMMED_COUNTS: tuple[Literal["minor_faults", "major_faults", "voluntary_switches", "involuntary_switches"], ...] = (
    "minor_faults", "major_faults", "voluntary_switches", "involuntary_switches")


def task_cpu_s(usage: Usage) -> float:
    """A task's CPU time as the accounting counts it: its cgroup's, else user + system."""
    return usage.get("cgroup_cpu_s", usage["user_cpu_s"] + usage["sys_cpu_s"])


def fold(master: Usage | None, tasks: Usage | None) -> Usage | None:
    """`master` with `tasks` counted in it. No record of the master's (a node that could not
    measure it) stays none: the tasks alone are not the attempt's usage."""
    if master is None or tasks is None:
        return master
    total = master.copy()
    for seconds in SUMMED_SECONDS:
        total[seconds] = master[seconds] + tasks[seconds]
    for count in SUMMED_COUNTS:
        total[count] = master[count] + tasks[count]
    _max_rss(total, master, tasks)
    if "cgroup_cpu_s" in master:  # else the accounting adds user and system, the tasks' included
        total["cgroup_cpu_s"] = master["cgroup_cpu_s"] + task_cpu_s(tasks)
    peaks = [u["cgroup_peak_memory_bytes"] for u in (master, tasks) if "cgroup_peak_memory_bytes" in u]
    if peaks:
        total["cgroup_peak_memory_bytes"] = max(peaks)
    return total


def uncounted(records: Iterable[PeTaskRecord]) -> Usage | None:
    """The summed usage of the ended tasks not yet counted in their attempt's, each marked
    counted (the caller commits the records with the attempt's usage); None if there are none."""
    total: Usage | None = None
    for record in records:
        usage = record["usage"]
        if record["counted"] or record["ended_at"] is None:
            continue
        record["counted"] = True
        if usage is not None and record["summed"]:
            total = _add(total, usage)
    return total


def _add(before: Usage | None, usage: Usage) -> Usage:
    """`before` with one more task's usage in it (its CPU time in `cgroup_cpu_s`, so that a task
    its cgroup measured adds what the cgroup counted)."""
    task = usage.copy()
    task["cgroup_cpu_s"] = task_cpu_s(usage)
    if before is None:
        return task
    for seconds in SUMMED_SECONDS:
        before[seconds] = before[seconds] + task[seconds]
    for count in SUMMED_COUNTS:
        before[count] = before[count] + task[count]
    before["cgroup_cpu_s"] = before.get("cgroup_cpu_s", 0.0) + task["cgroup_cpu_s"]
    _max_rss(before, before, task)
    if "cgroup_peak_memory_bytes" in task:
        before["cgroup_peak_memory_bytes"] = max(before.get("cgroup_peak_memory_bytes", 0),
                                                 task["cgroup_peak_memory_bytes"])
    return before


def _max_rss(total: Usage, one: Usage, other: Usage) -> None:
    """The max RSS of two usages together, into `total`, with the mark it is known against
    (docs/accounting.md, Max RSS). A figure not known (0) is at most its mark: the larger known
    figure is the max where it is at least every such mark, and keeps the mark of the usage it
    came from; else the max is not known either, at most the largest mark. A figure not known
    and of no mark bounds nothing (a node that could not read the mark)."""
    known = [u for u in (one, other) if u["max_rss_kib"] > 0]
    marks = [u["max_rss_inherited_kib"] for u in (one, other)
             if u["max_rss_kib"] <= 0 and "max_rss_inherited_kib" in u]
    largest = max(known, key=lambda u: u["max_rss_kib"], default=None)
    if largest is not None and largest["max_rss_kib"] >= max(marks, default=0):
        total["max_rss_kib"] = largest["max_rss_kib"]
        mark = largest.get("max_rss_inherited_kib")
    else:
        total["max_rss_kib"] = 0
        mark = max(marks, default=None)
    if mark is None:
        total.pop("max_rss_inherited_kib", None)
    else:
        total["max_rss_inherited_kib"] = mark
