"""A one-line progress bar of a set of jobs' tasks, redrawn in place on a terminal (`drover wait
--progress`, `drover status --watch`): how many are done, running, pending and failed, the rate
they end at (tasks/s) and when, at that rate, the last will have ended.

Written by hand with a carriage return: a bar library would cost every command that imports
it start-up time, for one line. Drawn only on a terminal; elsewhere nothing is written.
"""

from __future__ import annotations

import shutil
import sys
import time
from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import TextIO

    from drover.client.client import Client

# What a task's state counts as on the bar (the rest, e.g. pending and held, wait).
DONE = frozenset({"completed"})
FAILED = frozenset({"failed", "cancelled", "timeout", "out_of_memory", "node_fail"})
RUNNING = frozenset({"running", "dispatched", "suspended", "completing"})
TICK_S = 0.5  # between redraws: often enough to look live, rarely enough to cost the controller nothing


@dataclass(frozen=True, slots=True)
class Tally:
    done: int = 0
    running: int = 0
    pending: int = 0
    failed: int = 0

    @property
    def ended(self) -> int:
        return self.done + self.failed

    @property
    def total(self) -> int:
        return self.done + self.running + self.pending + self.failed


def tally(counts: Iterable[Mapping[str, int]]) -> Tally:
    """Every job's task counts (state → number), added up as the bar shows them."""
    done = running = pending = failed = 0
    for per_state in counts:
        for state, count in per_state.items():
            if state in DONE:
                done += count
            elif state in FAILED:
                failed += count
            elif state in RUNNING:
                running += count
            else:
                pending += count
    return Tally(done, running, pending, failed)


def line(now: Tally, rate: float | None, columns: int) -> str:
    """The bar and its figures, narrower than `columns` (a line as wide as the terminal would
    wrap on some): the figures first, the bar in what is left."""
    figures = f" {now.ended}/{now.total} | {now.done} done, {now.running} running, {now.pending} pending, " \
              f"{now.failed} failed | " + (f"{rate:.1f} tasks/s, ETA {_eta(now, rate)}" if rate else "ETA --")
    room = columns - 1 - len(figures) - 2
    if room < 10:
        return figures.strip()[: max(columns - 1, 0)]
    filled = room * now.ended // now.total if now.total else 0
    return "[" + "#" * filled + "." * (room - filled) + "]" + figures


def _eta(now: Tally, rate: float) -> str:
    seconds = int((now.total - now.ended) / rate + 0.5)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Bar:
    """The line on `stream`, redrawn over itself; the rate counts the tasks that ended since the
    bar was first drawn, over the time since."""

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.clock = stream, clock
        self.first: tuple[float, int] | None = None

    def draw(self, now: Tally) -> None:
        at = self.clock()
        if self.first is None:
            self.first = (at, now.ended)
        since, ended_then = self.first
        rate = (now.ended - ended_then) / (at - since) if at > since and now.ended > ended_then else None
        columns = shutil.get_terminal_size().columns
        self.stream.write("\r" + line(now, rate, columns) + "\x1b[K")  # erase what a longer line left
        self.stream.flush()

    def close(self) -> None:
        """Leave the last line as it stands, and the cursor on the next."""
        if self.first is not None:
            self.stream.write("\n")
            self.stream.flush()


def follow(api: Client, job_ids: list[int], deadline: float | None = None) -> None:
    """Until every job has ended (or `deadline`, a time.monotonic(), has passed): a bar of their
    tasks on stderr when it is a terminal, nothing written otherwise."""
    from drover.core.errors import Unavailable, Unreachable

    bar = Bar(sys.stderr) if sys.stderr.isatty() else None
    counts: dict[int, Mapping[str, int]] = {}
    ended: set[int] = set()
    try:
        while True:
            for job_id in job_ids:
                if job_id in ended:
                    continue
                try:
                    reply = api.wait_json(job_id, 0)
                except Unreachable:
                    raise
                except Unavailable:  # the store restarts: the jobs go on, the watch too
                    continue
                counts[job_id] = reply["job"]["task_counts"]
                if reply["ended"]:
                    ended.add(job_id)
            if bar is not None and counts:
                bar.draw(tally(counts.values()))
            if len(ended) == len(job_ids) or (deadline is not None and time.monotonic() >= deadline):
                return
            time.sleep(TICK_S)
    finally:
        if bar is not None:
            bar.close()
