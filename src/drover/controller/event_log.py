"""A job's event log in a file of the user's (`--event-log FILE`; HTCondor's user log, Flux's
eventlog): every event of the job, one JSON object per line, each exactly once.

Each line carries the event's sequence number. The file is appended to after the events are
committed; a controller that died in between catches up when it starts again, from the last
sequence number the file holds, so no line is written twice and none is lost.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable

from drover.core.job import Job
from drover.store.base import EventRecord, Store

log = logging.getLogger("drover.controller")
CATCH_UP_ENDED_WITHIN_S = 3600.0


class EventLogFiles:
    def __init__(self) -> None:
        self._last_seq: dict[tuple[str, int], int] = {}  # (path, job) → the job's last number in it

    def append(self, job: Job, events: list[EventRecord]) -> None:
        path = job.spec.get("event_log")
        if not path:
            return
        last = self._last_seq.get((path, job.id))
        if last is None:
            last = self._last_seq[path, job.id] = _last_seq_in(path, job.id)
        lines = [
            json.dumps({"seq": e.seq, "time": e.time, "job": e.job_id, "task": e.index, "attempt": e.attempt,
                        "event": e.kind, **e.detail}, separators=(",", ":")) + "\n"
            for e in events if e.seq > last and e.job_id == job.id
        ]
        if not lines:
            return
        try:
            with open(path, "a", encoding="utf-8") as file:
                file.write("".join(lines))
        except OSError as error:
            log.warning("job %d: cannot append to its event log %s: %s", job.id, path, error.strerror)
            return
        self._last_seq[path, job.id] = max(e.seq for e in events if e.job_id == job.id)

    def catch_up(self, store: Store, jobs: Iterable[Job]) -> None:
        """After a restart: write what was committed but not yet appended."""
        for job in jobs:
            path = job.spec.get("event_log")
            if path:
                last = self._last_seq[path, job.id] = _last_seq_in(path, job.id)
                self.append(job, [event for _, event in store.events_of(job.id, last, 100_000)])


def _last_seq_in(path: str, job_id: int) -> int:
    """The highest sequence number of `job_id` in the file (which may be shared by jobs)."""
    try:
        with open(path, "rb") as file:
            file.seek(0, os.SEEK_END)
            file.seek(max(file.tell() - 65536, 0))
            tail = file.read().splitlines()
    except FileNotFoundError:
        return 0
    for line in reversed(tail):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("job") == job_id:
            return int(record.get("seq", 0))
    return 0
