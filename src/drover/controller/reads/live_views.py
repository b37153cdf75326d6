"""Live jobs as a listing shows them, encoded and kept while they do not change: most live jobs
wait, and a waiting job shows the same bytes listing after listing. An entry is good while its
job's changing parts (priority, state, task counts, the reason it waits) are what they were
when it was built; the rest of a job is fixed when it is submitted. Bounded: the least
recently listed go first. Used on the loop thread only."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import msgspec

from drover.controller.reads import views
from drover.core.job import Job
from drover.scheduler.reasons import Waiting

_encode = msgspec.json.Encoder().encode


class LiveJobViews:
    def __init__(self, capacity: int = 20_000) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[int, tuple[tuple[Any, ...], msgspec.Raw]] = OrderedDict()

    def entry(self, job: Job, counts: dict[str, int], reason: Waiting | None) -> msgspec.Raw:
        """The job's entry in a listing; `counts` are its task counts (Job.task_counts)."""
        changing = (job.priority, job.state, job.ended_at, reason, tuple(counts.items()))
        kept = self._kept.get(job.id)
        if kept is not None and kept[0] == changing:
            self._kept.move_to_end(job.id)
            return kept[1]
        entry = msgspec.Raw(_encode(views.job_summary(job, counts, views.job_exit_status(job), reason)))
        self._kept[job.id] = (changing, entry)
        self._kept.move_to_end(job.id)
        while len(self._kept) > self.capacity:
            self._kept.popitem(last=False)
        return entry

    def __len__(self) -> int:
        return len(self._kept)
