"""What the controller counts as it works, for its metrics (controller/reads/metrics.py): store
commits and their latency, planner passes and their duration, and what the committed changes
say happened to attempts and cleanup steps. In memory only, from the controller's start; kept
across reloads of the working set (the shell holds one, and hands it to each working set).

Plain numbers, no exposition library here: the shell pays an addition or two per commit, and
the metrics read them when scraped. Counting what a commit says, after the store took it, counts
each event once, whatever was put back and handled again before.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence

from drover.store.base import Changes

# Buckets in seconds: a commit takes well under a millisecond on SQLite with synchronous=NORMAL,
# milliseconds with FULL or PostgreSQL; a planner pass up to a second over a long queue.
COMMIT_BUCKETS_S = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
PASS_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

# A task's states while an attempt of it lives: leaving them ends the attempt.
_ATTEMPT_STATES = frozenset({"dispatched", "running", "suspended", "completing"})


class Histogram:
    """Observations in fixed buckets (upper bounds, each bucket counted on its own; the
    exposition makes them cumulative), their count and their sum."""

    __slots__ = ("bounds", "buckets", "count", "sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.buckets = [0] * (len(self.bounds) + 1)  # the last: above every bound
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.buckets[bisect_left(self.bounds, value)] += 1
        self.count += 1
        self.sum += value

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations at or below it), the last bound +Inf."""
        found, total = [], 0
        for bound, count in zip((*self.bounds, float("inf")), self.buckets):
            total += count
            found.append((bound, total))
        return found


class Tallies:
    def __init__(self) -> None:
        self.commits = 0
        self.commit_failures = 0
        self.commit_seconds = Histogram(COMMIT_BUCKETS_S)
        self.passes = 0
        self.pass_seconds = Histogram(PASS_BUCKETS_S)
        self.backfill_starts = 0
        self.attempts_started = 0
        self.attempts_ended: Counter[str] = Counter()  # by outcome: the event of the attempt's end
        self.requeued = 0
        self.cleanup_failures: Counter[str] = Counter()  # by step: each failed try a node reported

    def committed(self, changes: Changes, seconds: float) -> None:
        """The store took `changes` in `seconds`."""
        self.commits += 1
        self.commit_seconds.observe(seconds)
        for event in changes.events:
            detail = event.detail
            trigger = detail.get("trigger")
            if trigger is not None:
                if trigger == "dispatch" and "promised_behind" not in detail or trigger == "start" and detail.get("promised"):
                    self.attempts_started += 1  # dispatched to start now, or promised and started by its node
                if trigger == "dispatch":
                    self.backfill_starts += 1 if detail.get("backfill") else 0
                elif (detail.get("before") in _ATTEMPT_STATES and detail.get("after") not in _ATTEMPT_STATES
                      and not detail.get("promise_unstarted")):
                    self.attempts_ended[event.kind] += 1
                    if trigger == "requeue":
                        self.requeued += 1
            elif event.kind == "cleanup_failed":
                self.cleanup_failures[str(detail.get("step"))] += 1

    def passed(self, seconds: float) -> None:
        """A planner pass took `seconds`."""
        self.passes += 1
        self.pass_seconds.observe(seconds)
