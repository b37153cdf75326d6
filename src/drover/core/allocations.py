"""Allocation queues (`drover alloc`): what the controller asks an outer scheduler (Slurm, ...)
for, and the decisions of when to ask, how much, when to wait after a failure and when to give
an idle allocation back. Pure: the caller gives the time and the facts; the controller's
allocator (controller/allocations/) runs the outer scheduler's commands.

HyperQueue's automatic allocation is the model: while work waits that a new node could run,
allocations are asked for, at most `backlog` waiting in the outer queue and `max_workers`
nodes in all; a node idle for `idle_timeout_s` leaves and its allocation ends; a refused or
failed submission is retried after a back-off that doubles.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

MANAGERS = ("slurm", "pbs", "lsf")  # the outer schedulers an allocation queue may use (cluster/outer/)
BACKOFF_FIRST_S = 10.0  # the wait after a first failure; it doubles with each failure in a row
BACKOFF_MAX_S = 600.0
END_MARGIN_MAX_S = 60.0  # a node stops taking work this long before its allocation ends, at most


class AllocationState(StrEnum):
    QUEUED = "queued"  # submitted; waiting in the outer scheduler's queue
    RUNNING = "running"  # the outer scheduler runs it: its nodes join, or have joined
    ENDED = "ended"  # it is over (its nodes left, it reached its time, or it was cancelled)
    FAILED = "failed"  # it ended before any of its nodes joined

    @property
    def is_live(self) -> bool:
        return self in (AllocationState.QUEUED, AllocationState.RUNNING)


@dataclass(frozen=True, slots=True)
class QueueParams:
    """What `drover alloc add` asked for."""

    manager: str = "slurm"
    time_limit_s: float = 3600.0
    workers_per_alloc: int = 1
    max_workers: int = 4
    backlog: int = 1
    idle_timeout_s: float = 300.0
    partition: str | None = None  # Slurm's partition (--partition), PBS's or LSF's queue (--queue)
    extra_args: tuple[str, ...] = ()  # passed to the outer scheduler's submit command as given
    name: str = ""

    def problems(self) -> list[str]:
        """What is wrong with these parameters, in words; empty when nothing is."""
        found = []
        if self.manager not in MANAGERS:
            found.append(f"unknown outer scheduler {self.manager!r} (known: {', '.join(MANAGERS)})")
        if not 60 <= self.time_limit_s <= 365 * 86400:
            found.append("--time-limit is from 1 minute to 365 days")
        if not 1 <= self.workers_per_alloc <= 1000:
            found.append("--workers-per-alloc is from 1 to 1000")
        if not 1 <= self.max_workers <= 100_000:
            found.append("--max-workers is from 1 to 100000")
        elif self.max_workers < self.workers_per_alloc:
            found.append(f"--max-workers ({self.max_workers}) is less than --workers-per-alloc "
                         f"({self.workers_per_alloc}): no allocation could ever be asked for")
        if not 1 <= self.backlog <= 1000:
            found.append("--backlog is from 1 to 1000")
        if not 1 <= self.idle_timeout_s <= 7 * 86400:
            found.append("--idle-timeout is from 1 second to 7 days")
        if self.partition is not None and not re.fullmatch(r"[A-Za-z0-9_.,-]{1,100}", self.partition):
            word = ("--partition", "partition") if self.manager == "slurm" else ("--queue", "queue")
            found.append(f"{word[0]} {self.partition!r} is not a {word[1]} name")
        if len(self.extra_args) > 100 or any(len(arg) > 1000 or "\0" in arg or "\n" in arg
                                             for arg in self.extra_args):
            found.append("the extra arguments are at most 100, each one line of at most 1000 characters")
        if self.name and not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", self.name):
            found.append(f"--name {self.name!r} is not a name (letters, digits, _ . -)")
        return found

    @property
    def end_margin_s(self) -> float:
        """How long before its allocation's end a node stops taking work and leaves."""
        return end_margin(self.time_limit_s)


def end_margin(time_limit_s: float) -> float:
    return min(END_MARGIN_MAX_S, max(time_limit_s * 0.1, 1.0))


@dataclass(frozen=True, slots=True)
class AllocQueue:
    id: int
    params: QueueParams
    created_at: float
    created_by: str
    paused: bool = False
    removed: bool = False
    failures: int = 0  # submissions or allocations that failed in a row
    backoff_until: float | None = None  # no submission before then
    last_error: str | None = None
    last_error_at: float | None = None


@dataclass(frozen=True, slots=True)
class Allocation:
    """One allocation the outer scheduler was asked for: `outer_id` is its job id there."""

    queue_id: int
    outer_id: str
    workers: int
    state: AllocationState
    submitted_at: float
    token_id: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    reason: str | None = None  # why it ended, or failed


def node_prefix(manager: str, outer_id: str) -> str:
    """The names of an allocation's nodes start with this: slurm-<job id>-<n> (pbs-, lsf-), where
    they came from."""
    return f"{manager}-{outer_id}-"


def node_name(manager: str, outer_id: str, index: int) -> str:
    return f"{node_prefix(manager, outer_id)}{index}"


@dataclass(frozen=True, slots=True)
class Waiting:
    """A pending job as the allocator sees it: how many of its tasks wait for room that no node
    has, and how long each runs at most (None: no limit)."""

    tasks: int
    run_limit_s: float | None


def demand(waiting: Iterable[Waiting], params: QueueParams) -> int:
    """How many waiting tasks a node of this queue could run: only those with a run limit that
    ends before the allocation's last moment for work (a node starts no task it would outlast,
    and none without a limit)."""
    usable = params.time_limit_s - params.end_margin_s
    return sum(item.tasks for item in waiting if item.run_limit_s is not None and item.run_limit_s <= usable)


def submissions(queue: AllocQueue, allocations: Iterable[Allocation], waiting_tasks: int, now: float) -> int:
    """How many allocations to ask for now: none while the queue is paused or backing off, or
    no task waits; else as many as the waiting tasks could use, within the backlog (allocations
    waiting in the outer queue) and the most workers in all."""
    if queue.paused or queue.removed or waiting_tasks <= 0:
        return 0
    if queue.backoff_until is not None and now < queue.backoff_until:
        return 0
    params = queue.params
    live = [item for item in allocations if item.queue_id == queue.id and item.state.is_live]
    queued = sum(1 for item in live if item.state is AllocationState.QUEUED)
    workers = sum(item.workers for item in live)
    by_backlog = params.backlog - queued
    by_workers = (params.max_workers - workers) // params.workers_per_alloc
    # Each waiting task needs a worker at least; the allocations already queued will take some.
    by_demand = math.ceil(waiting_tasks / params.workers_per_alloc) - queued
    return max(0, min(by_backlog, by_workers, by_demand))


def backoff_s(failures: int) -> float:
    """The wait before the next submission after `failures` failures in a row."""
    if failures <= 0:
        return 0.0
    return min(BACKOFF_FIRST_S * 2.0 ** min(failures - 1, 30), BACKOFF_MAX_S)


def failed(queue: AllocQueue, error: str, now: float) -> AllocQueue:
    """The queue after a failed submission or an allocation that failed to start."""
    failures = queue.failures + 1
    return replace(queue, failures=failures, backoff_until=now + backoff_s(failures), last_error=error[:2000],
                   last_error_at=now)


def succeeded(queue: AllocQueue) -> AllocQueue:
    """The queue after one of its allocations had a node join: the failures in a row are over."""
    return replace(queue, failures=0, backoff_until=None) if queue.failures or queue.backoff_until else queue


@dataclass(slots=True)
class IdleWatch:
    """Since when each node of an allocation has been idle, as the allocator saw it (memory only:
    a restarted controller starts counting again)."""

    since: dict[str, float] = field(default_factory=dict)

    def update(self, busy: Mapping[str, bool], now: float) -> None:
        """`busy`: every allocation node there is now, and whether it runs anything."""
        for name in list(self.since):
            if name not in busy or busy[name]:
                del self.since[name]
        for name, running in busy.items():
            if not running:
                self.since.setdefault(name, now)

    def idle_for(self, name: str, now: float) -> float:
        started = self.since.get(name)
        return 0.0 if started is None else now - started


def idle_allocations(allocations: Iterable[Allocation], nodes_of: Mapping[str, list[str]], watch: IdleWatch,
                     idle_timeout_s: float, now: float) -> list[str]:
    """The running allocations (by outer id) whose every node has been idle `idle_timeout_s` at
    least: they are given back."""
    ending = []
    for item in allocations:
        names = nodes_of.get(item.outer_id, [])
        if item.state is AllocationState.RUNNING and names and \
                all(watch.idle_for(name, now) >= idle_timeout_s for name in names):
            ending.append(item.outer_id)
    return ending


def parse_duration(text: str) -> float:
    """'90s', '5m', '1h', '2d', '1h30m' or plain seconds; ValueError with the reason."""
    given = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", given):
        return float(given)
    parts = re.findall(r"(\d+(?:\.\d+)?)([smhd])", given)
    if not parts or "".join(number + unit for number, unit in parts) != given:
        raise ValueError(f"{text!r} is not a duration (say 90s, 5m, 1h, 2d or 1h30m)")
    return sum(float(number) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit] for number, unit in parts)
