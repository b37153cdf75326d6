"""Accounting summaries: ended attempts grouped by user, queue, node or day, with their jobs,
attempts, CPU and wall-clock hours, wait percentiles and efficiency percentiles; the times
`drover history` takes; and which ended attempts never ran a job (`never_ran`). Pure: the facts come in as plain values, `now` is passed in.

Percentiles are nearest-rank: the smallest value at least p % of the values are not above
(so p50 of 1, 2, 3, 4 is 2, and every percentile is a value that was measured). A day is the
calendar day the attempt ended on, in the local time of the host that groups (the controller's).
CPU efficiency is CPU time / (CPUs × wall-clock time); memory efficiency is peak memory /
memory requested, for the attempts that requested some.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

GROUPINGS = ("user", "queue", "node", "day")
TIME_FORMATS = "YYYY-MM-DD[THH:MM[:SS]], today, yesterday, now, -N[s|m|h|d|w] (ago), or a Unix time"

_AGO = re.compile(r"-(\d{1,9})([smhdw]?)")
_UNIX = re.compile(r"\d{1,12}(\.\d+)?")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "": 86400}


@dataclass(slots=True, frozen=True)
class AccountingFacts:
    """What a summary needs of one ended attempt."""

    job_id: int
    owner: str
    queue: str
    node: str
    ended_at: float
    wait_s: float | None  # start - eligible; None: it never started
    wall_s: float
    cpus: int
    cpu_s: float | None  # None: no usage was recorded
    peak_bytes: int | None
    memory_mib: int

    @property
    def cpu_efficiency(self) -> float | None:
        return cpu_efficiency(self.cpu_s, self.cpus, self.wall_s)

    @property
    def memory_efficiency(self) -> float | None:
        return memory_efficiency(self.peak_bytes, self.memory_mib)


@dataclass(slots=True)
class GroupSummary:
    key: str
    jobs: int = 0
    attempts: int = 0
    cpu_hours: float = 0.0
    wall_hours: float = 0.0
    wait_p50_s: float | None = None
    wait_p90_s: float | None = None
    cpu_efficiency_p50: float | None = None
    memory_efficiency_p50: float | None = None


@dataclass(slots=True)
class _Group:
    jobs: set[int] = field(default_factory=set)
    attempts: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0
    waits: list[float] = field(default_factory=list)
    cpu_efficiencies: list[float] = field(default_factory=list)
    memory_efficiencies: list[float] = field(default_factory=list)


def never_ran(started_at: float | None, exit_code: int | None, signal: int | None, failure: str | None) -> bool:
    """An attempt stopped before its job started, with nothing gone wrong (a promise taken back,
    a dispatched task cancelled or requeued before its shepherd began): no job ran, so it has no
    exit status of its own (history shows none, not the 1 a shell gives a command that could not
    start), and Grid Engine, which accounts only jobs its shepherd started, keeps no record of
    it. One whose shepherd failed before the job (a launch failure: `failure` says why) keeps both."""
    return started_at is None and exit_code is None and signal is None and not failure


def cpu_efficiency(cpu_s: float | None, cpus: int, wall_s: float) -> float | None:
    if cpu_s is None or cpus <= 0 or wall_s <= 0:
        return None
    return cpu_s / (cpus * wall_s)


def memory_efficiency(peak_bytes: int | None, memory_mib: int) -> float | None:
    """The peak against the memory asked for; None where either is not known. A peak of 0 is not
    known: no cgroup measured it and the max RSS was not the job's own (accounting.md, Max RSS)."""
    if not peak_bytes or memory_mib <= 0:
        return None
    return peak_bytes / (memory_mib * 1024 * 1024)


def percentile(values: Sequence[float], p: float) -> float | None:
    """The nearest-rank p-th percentile (0 < p <= 100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def day_of(when: float) -> str:
    """The local calendar day of a Unix time, YYYY-MM-DD."""
    return time.strftime("%Y-%m-%d", time.localtime(when))


def group_key(facts: AccountingFacts, by: str) -> str:
    if by == "user":
        return facts.owner
    if by == "queue":
        return facts.queue
    if by == "node":
        return facts.node
    if by == "day":
        return day_of(facts.ended_at)
    raise ValueError(f"cannot group by {by!r}; choose one of {', '.join(GROUPINGS)}")


def summarise(records: Iterable[AccountingFacts], by: str) -> list[GroupSummary]:
    """One summary per group, in the order of their keys."""
    if by not in GROUPINGS:
        raise ValueError(f"cannot group by {by!r}; choose one of {', '.join(GROUPINGS)}")
    groups: dict[str, _Group] = {}
    for facts in records:
        key = group_key(facts, by)
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group()
        group.jobs.add(facts.job_id)
        group.attempts += 1
        group.cpu_s += facts.cpu_s or 0.0
        group.wall_s += facts.wall_s
        if facts.wait_s is not None:
            group.waits.append(max(facts.wait_s, 0.0))
        if (efficiency := facts.cpu_efficiency) is not None:
            group.cpu_efficiencies.append(efficiency)
        if (efficiency := facts.memory_efficiency) is not None:
            group.memory_efficiencies.append(efficiency)
    return [
        GroupSummary(
            key=key, jobs=len(group.jobs), attempts=group.attempts, cpu_hours=group.cpu_s / 3600,
            wall_hours=group.wall_s / 3600, wait_p50_s=percentile(group.waits, 50),
            wait_p90_s=percentile(group.waits, 90), cpu_efficiency_p50=percentile(group.cpu_efficiencies, 50),
            memory_efficiency_p50=percentile(group.memory_efficiencies, 50),
        )
        for key, group in sorted(groups.items())
    ]


def parse_when(text: str, now: float) -> float:
    """A time `drover history --since/--until` takes (TIME_FORMATS), in local time; ValueError
    for anything else."""
    word = text.strip().lower()
    midnight = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0)
    if word == "now":
        return now
    if word == "today":
        return midnight.timestamp()
    if word == "yesterday":
        return (midnight - timedelta(days=1)).timestamp()
    if match := _AGO.fullmatch(word):
        return now - int(match[1]) * _UNIT_S[match[2]]
    if _UNIX.fullmatch(word) and len(word.partition(".")[0]) > 8:
        return float(word)
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        pass
    raise ValueError(f"{text!r} is not a time; use {TIME_FORMATS}")
