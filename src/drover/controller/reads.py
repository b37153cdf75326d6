"""The queries the API answers: jobs, one job, history, the event log, staged-out files and
nodes. Live jobs come from the working set, ended ones from the store; the replies are the
API's read models (`views.py` builds them). Read-only.

Who may ask is decided before (controller/auth.py); a query that must check each job it finds
takes the check as an argument, as the actions do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from drover.controller import staged_files, views
from drover.controller.service import ControllerService
from drover.core.errors import NotFound
from drover.protocol.api import Event, FileInfo, HistoryRow, JobInfo, NodeInfo
from drover.store.base import JobFilter

MaySee = Callable[[str, int], None]  # (owner, job id): raises if the asker may not see the job


class Reads:
    """Read models over the service's current working set and store (the working set is
    replaced when the service reloads it, so it is looked up on every query)."""

    def __init__(self, service: ControllerService) -> None:
        self._service = service

    def job(self, job_id: int, may_see: MaySee) -> JobInfo:
        """A job, live or ended, with its tasks and every attempt."""
        service = self._service
        job = service.state.jobs.get(job_id) or service.store.load_job(job_id)
        if job is None:
            raise NotFound(f"job {job_id} does not exist")
        may_see(job.owner, job_id)
        return views.job_info(service.state, job, with_tasks=True, store=service.store)

    def jobs(self, query: JobFilter) -> list[JobInfo]:
        """Live jobs (and ended ones, if asked) in id order, the newest `query.limit`. A job
        matches `query.states` by its own state or by the state of any of its tasks."""
        state, store = self._service.state, self._service.store
        jobs = [
            views.job_info(state, job)
            for job in sorted(state.jobs.values(), key=lambda job: job.id)
            if (query.owner is None or job.owner == query.owner) and (query.name is None or job.name == query.name)
        ]
        if query.include_ended:
            ended = [views.job_info(state, job) for job in store.list_ended_jobs(query)]
            jobs = sorted(ended + jobs, key=lambda info: info.id)
        if query.states:
            states = query.states
            jobs = [info for info in jobs if info.state in states or any(info.task_counts.get(s) for s in states)]
        return jobs[-query.limit:]

    def history(self, owner: str | None, limit: int, since: float | None) -> list[HistoryRow]:
        """Ended attempts, newest first; `owner` None for everyone's."""
        return [views.history_row(*row) for row in self._service.store.history(owner, limit, since)]

    async def events(self, job_id: int | None, after: int, limit: int, wait_s: float) -> list[Event]:
        """Events after sequence number `after` (of one job, or all); if there are none yet,
        wait up to `wait_s` for the next to be committed (a long poll)."""
        service = self._service
        found = service.store.events_of(job_id, after, limit)
        if not found and wait_s:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + wait_s
            while not found and loop.time() < deadline:
                await service.wait_for_events(deadline - loop.time())
                found = service.store.events_of(job_id, after, limit)
        return [
            Event(seq=seq, time=e.time, job_id=e.job_id, index=e.index, attempt=e.attempt,
                  kind=e.kind, detail=e.detail)
            for seq, e in found
        ]

    def staged_files(self, job_id: int) -> list[FileInfo]:
        """The files the job's attempts staged out, kept by the controller."""
        kept = staged_files.listing(self._service.settings.files_dir, job_id)
        return [FileInfo(task=task, attempt=attempt, name=name, size=size) for task, attempt, name, size in kept]

    def staged_file(self, job_id: int, index: int, attempt: int, name: str) -> bytes:
        return staged_files.read(self._service.settings.files_dir, job_id, index, attempt, name)

    def nodes(self) -> list[NodeInfo]:
        return views.node_info(self._service.state)
