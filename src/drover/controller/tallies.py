"""What the controller counts as it works, for its metrics (controller/reads/metrics.py): store
commits and their latency, planner passes and their duration, and what the committed changes
say happened to attempts and cleanup steps. In memory only, from the controller's start; kept
across reloads of the working set (the shell holds one, and hands it to each working set).

Plain numbers, no exposition library here: the shell pays an addition or two per commit, and
the metrics read them when scraped. Counting what a commit says, after the store took it, counts
each event once, whatever was put back and handled again before.

An attempt is counted started once and ended once, whichever way it goes: dispatched to start
now, at its dispatch; promised (its dispatch says `promised_behind`), when its node says it
started, or else at its end, with its end (it failed before it started, it was lost with its
node, the controller failed its job, or its Started report never came), unless it ended as a
promise taken back before it started with nothing gone wrong (`promise_unstarted`: no job ran,
as core/accounting.never_ran says for drover history and qacct), which is counted neither
started nor ended. The promised attempts whose start is not counted yet are kept for that, by name,
until they start or end: so started and ended balance for every attempt dispatched since the
controller started (one dispatched before counts only what happens to it since).
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
        # The promised attempts dispatched since the start whose start is not counted yet
        # (job, task, attempt): counted as they start, or with their end.
        self._promised: set[tuple[int | None, int | None, int | None]] = set()

    def committed(self, changes: Changes, seconds: float) -> None:
        """The store took `changes` in `seconds`."""
        self.commits += 1
        self.commit_seconds.observe(seconds)
        for event in changes.events:
            detail = event.detail
            trigger = detail.get("trigger")
            if trigger is not None:
                key = (event.job_id, event.index, event.attempt)
                if trigger == "dispatch":
                    if "promised_behind" in detail:
                        self._promised.add(key)  # counted when its node starts it
                    else:
                        self.attempts_started += 1
                    self.backfill_starts += 1 if detail.get("backfill") else 0
                elif trigger == "start":
                    if key in self._promised or detail.get("promised"):  # or promised before the start
                        self._promised.discard(key)
                        self.attempts_started += 1
                elif detail.get("before") in _ATTEMPT_STATES and detail.get("after") not in _ATTEMPT_STATES:
                    self._ended(event.kind, trigger, key, bool(detail.get("promise_unstarted")))
            elif event.kind == "cleanup_failed":
                self.cleanup_failures[str(detail.get("step"))] += 1

    def _ended(self, kind: str, trigger: str, key: tuple[int | None, int | None, int | None],
               taken_back: bool) -> None:
        """An attempt's end: counted, with its start if that was never counted (a promise that
        ended before its node said it started); a promise taken back that ran nothing is
        counted neither started nor ended."""
        unstarted = key in self._promised
        self._promised.discard(key)
        if taken_back:
            return
        if unstarted:
            self.attempts_started += 1
        self.attempts_ended[kind] += 1
        if trigger == "requeue":
            self.requeued += 1

    def passed(self, seconds: float) -> None:
        """A planner pass took `seconds`."""
        self.passes += 1
        self.pass_seconds.observe(seconds)
