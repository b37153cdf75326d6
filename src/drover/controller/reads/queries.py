"""The queries the API answers: jobs, one job, history, the event log, staged-out files and
nodes. Live jobs come from the working set, ended ones from the store; the replies are the
API's read models (`views.py` builds them). Read-only.

Reads never stall writes: a listing picks its page from the working set on the loop (cheap
fields first, entries built for the page only, and kept while their job does not change:
live_views.py), and leaves everything that reads the store or encodes a long reply to the
reading threads (read_worker.py). An ended job's entry is encoded once and kept
(ended_views.py). At most READS_AT_ONCE long reads are worked on at a time; the others wait
their turn holding nothing, so a burst of them costs memory for a few pages, not for every
request, and the loop's share of each is small.

Who may ask is decided before (controller/security/auth.py); a query that must check each job it finds
takes the check as an argument, as the actions do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import msgspec

from drover.controller.nodes import staged_files
from drover.controller.reads import promised_view, views
from drover.controller.reads.ended_views import EndedJobViews
from drover.controller.reads.live_views import LiveJobViews
from drover.controller.reads.paging import history_token
from drover.controller.reads.read_worker import ReadWorker
from drover.controller.service import ControllerService
from drover.core.errors import NotFound
from drover.core.views import job_state
from drover.protocol.api import (
    CheckpointInfo,
    Event,
    FileInfo,
    JobInfo,
    JobSamples,
    NodeInfo,
    ParallelEnvironmentInfo,
    PriorityInfo,
    PriorityList,
    PriorityWeights,
    QueueInfo,
    TopList,
)
from drover.store.base import HistoryCursor, HistoryFilter, JobFilter, StoreReader
from drover.store.faults import StoreFault

MaySee = Callable[[str, int], None]  # (owner, job id): raises if the asker may not see the job
READS_AT_ONCE = 4  # listings worked on at once; with 2 reading threads, one can wait ready
SHORT_LISTING = 200  # live jobs a listing may show and still be answered without waiting its turn

_encode = msgspec.json.Encoder().encode


class JobPage(msgspec.Struct, omit_defaults=True):
    """api.JobList, each job already encoded: the same JSON."""

    jobs: list[msgspec.Raw]
    next_before: int | None = None


class HistoryPage(msgspec.Struct, omit_defaults=True):
    """api.History, each row already encoded: the same JSON."""

    rows: list[msgspec.Raw]
    next_before: str | None = None


class EventPage(msgspec.Struct):
    """api.EventList, each event already encoded: the same JSON."""

    events: list[msgspec.Raw]


class Reads:
    """Read models over the service's current working set and store (the working set is
    replaced when the service reloads it, so it is looked up on every query)."""

    def __init__(self, service: ControllerService, worker: ReadWorker | None = None,
                 ended_views: EndedJobViews | None = None) -> None:
        self._service = service
        self._worker = worker if worker is not None else ReadWorker(service.store.reader)
        self._ended = ended_views if ended_views is not None else EndedJobViews()
        self._live = LiveJobViews()
        self._slots = asyncio.Semaphore(READS_AT_ONCE)

    def close(self) -> None:
        self._worker.close()

    async def job(self, job_id: int, may_see: MaySee) -> JobInfo:
        """A job, live or ended, with its tasks and every attempt. A live one is read on the
        loop (its tasks change there); an ended one, which may have many, on a reading thread."""
        service = self._service
        if job_id in service.in_doubt:
            raise StoreFault(f"job {job_id} changed while the job store was away, and whether the change was kept "
                             "is not known yet; ask again once the store answers")
        live = service.state.jobs.get(job_id)
        if live is not None:
            may_see(live.owner, job_id)
            try:
                return views.job_info(service.state, live, with_tasks=True, store=service.store)
            except StoreFault:
                # The store is away: the job as the working set has it (whole, or `ready_to_read`
                # would have refused), with its tasks' attempts now; earlier attempts are the store's.
                return views.job_info(service.state, live, with_tasks=True)

        def stored(reader: StoreReader) -> JobInfo | None:
            job = reader.load_job(job_id)
            return views.stored_job_info(job, reader.attempts_of(job_id)) if job is not None else None

        async with self._slots:
            info = await self._worker.run(stored)
        if info is None:
            raise NotFound(f"job {job_id} does not exist")
        may_see(info.owner, job_id)
        return info

    async def jobs(self, query: JobFilter) -> bytes:
        """The JSON of an api.JobList: live jobs (and ended ones, if asked) in id order, the
        newest `query.limit`, below `query.before` if set. A live job matches `query.states` by
        its own state or by the state of any of its tasks; an ended one by its final state.
        A short listing of live jobs only (`drover status` on a quiet cluster) is answered at
        once, without waiting behind the long ones."""
        if not query.include_ended:
            candidates = self._live_candidates(query)
            if min(len(candidates), query.limit) <= SHORT_LISTING:
                return _encode(_job_page(self._live_page(candidates, query), query.limit))
        async with self._slots:
            live = self._live_page(self._live_candidates(query), query)
            if not query.include_ended:
                return _encode(_job_page(live, query.limit))
            return await self._worker.run(lambda reader: _encode(self._with_ended(reader, query, live)))

    def _live_candidates(self, query: JobFilter) -> list[int]:
        """Ids of the live jobs that pass the cheap checks (owner, name, cursor), newest first."""
        owner, name, before = query.owner, query.name, query.before
        doubted = self._service.in_doubt  # changed while the store was away: left out until it is back
        ids = [
            job.id for job in self._service.state.jobs.values()
            if (owner is None or job.owner == owner) and (name is None or job.name == name)
            and (before is None or job.id < before) and job.id not in doubted
        ]
        ids.sort(reverse=True)
        return ids

    def _live_page(self, candidates: list[int], query: JobFilter) -> list[tuple[int, msgspec.Raw]]:
        """The page's live jobs, newest first, with their entries (kept ones where the job did
        not change). On the loop: the working set changes under any other thread."""
        state, states = self._service.state, query.states
        found: list[tuple[int, msgspec.Raw]] = []
        for job_id in candidates:
            if len(found) >= query.limit:
                break
            job = state.jobs.get(job_id)
            if job is None:
                continue  # ended while this listing waited its turn: the store has it
            promised = promised_view.promised_attempts(state, job) if job.tasks else []
            counts = promised_view.shown_counts(job.task_counts(), len(promised))
            if states:
                word = job.state.value if job.state else job_state(counts)
                if word not in states and not any(counts.get(s) for s in states):
                    continue
            found.append((job_id, self._live.entry(job, counts, promised_view.shown_reason(state, job, promised))))
        return found

    def _with_ended(self, reader: StoreReader, query: JobFilter, live: list[tuple[int, msgspec.Raw]]) -> JobPage:
        """On a reading thread: the page's ended jobs, merged with its live ones (taken on the
        loop). A job that ended since the loop looked is in both: the store's entry, the newer,
        is shown."""
        page = dict(live)
        keys = reader.ended_job_keys(query)
        kept = self._ended.found(keys)
        missing = [job_id for job_id, ended_at in keys if (job_id, ended_at) not in kept]
        if missing:
            built = {
                (record.job.id, record.job.ended_at or 0.0): msgspec.Raw(_encode(views.ended_job_summary(record)))
                for record in reader.ended_jobs(missing)
            }
            self._ended.keep(built)
            kept.update(built)
        page.update((job_id, kept[job_id, ended_at]) for job_id, ended_at in keys if (job_id, ended_at) in kept)
        newest = sorted(page, reverse=True)[:query.limit]
        return _job_page([(job_id, page[job_id]) for job_id in newest], query.limit)

    async def history(self, owner: str | None, limit: int, since: float | None,
                      before: HistoryCursor | None = None, where: HistoryFilter | None = None) -> bytes:
        """The JSON of an api.History: ended attempts, the newest `limit` (older than `before`,
        if set) of those `where` selects, newest last; `owner` None for everyone's (`owner` and
        `since`, if set, narrow `where`)."""
        from drover.controller.reads.history_views import history_row

        def page(reader: StoreReader) -> bytes:
            records = reader.history(owner, limit, since, before, where)
            rows = [msgspec.Raw(_encode(history_row(record))) for record in reversed(records)]
            last = records[-1] if len(records) == limit else None
            cursor = history_token((last.ended_at, last.job_id, last.index, last.attempt)) if last else None
            return _encode(HistoryPage(rows=rows, next_before=cursor))

        async with self._slots:
            return await self._worker.run(page)

    async def history_summary(self, by: str, where: HistoryFilter) -> bytes:
        """The JSON of an api.HistorySummary: the ended attempts `where` selects, grouped by
        user, queue, node or day, by the store (its indexes choose the rows); only the groups
        are sent."""
        from drover.controller.reads.history_views import history_group
        from drover.protocol.api import HistorySummary

        def summary(reader: StoreReader) -> bytes:
            groups = reader.history_summary(by, where)
            return _encode(HistorySummary(by=by, groups=[history_group(group) for group in groups]))

        async with self._slots:
            return await self._worker.run(summary)

    async def events(self, job_id: int | None, after: int, limit: int, wait_s: float) -> bytes:
        """The JSON of an api.EventList: events after sequence number `after` (of one job, or
        all); if there are none yet, wait up to `wait_s` for the next to be committed (a long
        poll)."""
        service = self._service
        marker = service.events_marker()
        found = await self._events(job_id, after, limit)
        if not found.events and wait_s:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + wait_s
            while not found.events and loop.time() < deadline:
                await service.wait_for_events(deadline - loop.time(), marker)
                marker = service.events_marker()
                found = await self._events(job_id, after, limit)
        return _encode(found)

    async def _events(self, job_id: int | None, after: int, limit: int) -> EventPage:
        def page(reader: StoreReader) -> EventPage:
            return EventPage(events=[
                msgspec.Raw(_encode(Event(seq=seq, time=e.time, job_id=e.job_id, index=e.index, attempt=e.attempt,
                                          kind=e.kind, detail=e.detail)))
                for seq, e in reader.events_of(job_id, after, limit)
            ])

        async with self._slots:
            return await self._worker.run(page)

    def staged_files(self, job_id: int) -> list[FileInfo]:
        """The files the job's attempts staged out, kept by the controller."""
        kept = staged_files.listing(self._service.settings.files_dir, job_id)
        return [FileInfo(task=task, attempt=attempt, name=name, size=size) for task, attempt, name, size in kept]

    def staged_file(self, job_id: int, index: int, attempt: int, name: str) -> bytes:
        return staged_files.read(self._service.settings.files_dir, job_id, index, attempt, name)

    def priority(self, owner: str | None) -> PriorityList:
        """Every pending job's priority factors (`owner`'s only, unless None), highest first."""
        from drover.controller.handlers.dispatch import policy_of, queue_priority
        from drover.core.job_state import JobState
        from drover.scheduler.priority import Weigher

        service = self._service
        state, now = service.state, service.clock()
        policy = policy_of(state, now, service.orders)
        weigher = Weigher(policy, {job.owner for job in state.jobs.values()}, now)
        rows = []
        for job in state.jobs.values():
            waiting = any(task.state is JobState.PENDING for task in job.tasks.values()) or (
                job.fresh_state is JobState.PENDING and job.fresh_count > 0)
            if not waiting or (owner is not None and job.owner != owner):
                continue
            factors = weigher.factors(job.owner, job.priority, queue_priority(state, job, service.orders), job.submitted_at)
            rows.append(PriorityInfo(job_id=job.id, owner=job.owner, queue=job.spec.queue,
                                     age=factors.age, fairshare=factors.fairshare, queue_factor=factors.queue,
                                     job=factors.job, total=factors.total))
        rows.sort(key=lambda row: (-row.total, state.jobs[row.job_id].submitted_at, row.job_id))
        weights = policy.weights
        return PriorityList(PriorityWeights(age=weights.age, fairshare=weights.fairshare, queue=weights.queue,
                                            job=weights.job, max_age_s=weights.max_age_s), rows)

    def checkpoints(self) -> list[CheckpointInfo]:
        """The cluster's checkpoint environments, as configured."""
        import shlex

        def command(words: tuple[str, ...] | None) -> str:
            return shlex.join(words) if words else "none"

        return [CheckpointInfo(name=e.name, interface=e.interface, ckpt_command=command(e.ckpt_command),
                               migr_command=command(e.migr_command), restart_command=command(e.restart_command),
                               clean_command=command(e.clean_command), ckpt_dir=e.ckpt_dir, signal=e.signal,
                               when=e.when, min_cpu_interval_s=e.min_cpu_interval_s)
                for _, e in sorted(self._service.settings.checkpoints.items())]

    def queues(self) -> list[QueueInfo]:
        from drover.controller.handlers.queue_load import queue_infos

        service = self._service
        return queue_infos(service.state, service.settings.queues, service.clock())

    def samples(self, job_id: int) -> JobSamples:
        """What the job's running attempts use now, as their nodes sampled it (in memory only)."""
        from drover.controller.reads.usage_views import job_samples

        return job_samples(self._service.state, self._service.samples, job_id)

    def top(self, owner: str | None) -> TopList:
        from drover.controller.reads.usage_views import top

        return top(self._service.state, self._service.samples, owner, self._service.clock())

    def parallel_environments(self) -> list[ParallelEnvironmentInfo]:
        from drover.controller.handlers.parallel_envs import infos

        return infos(self._service.state, self._service.settings.parallel_environments)

    def nodes(self) -> list[NodeInfo]:
        nodes = views.node_info(self._service.state)
        for node in nodes:  # where a user of this host reads a job's files directly
            channel = self._service.channels.channel(node.name)
            node.local = channel is not None and channel.local
        return nodes


def _job_page(newest_first: list[tuple[int, msgspec.Raw]], limit: int) -> JobPage:
    """In id order; a full page says where the next, older one starts."""
    full = len(newest_first) >= limit > 0
    return JobPage(jobs=[raw for _, raw in reversed(newest_first)], next_before=newest_first[-1][0] if full else None)
