"""The read models on a real (temporary) SQLite store, without sockets or processes: listings
and history paged by cursor, ended jobs read off the loop from the store's aggregates and shown
exactly as the full job would be, and every read done on a reading thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from drover.controller.handlers.actions import act
from drover.controller.handlers.dispatch import OrderOptions, schedule
from drover.controller.handlers.node_reports import on_node_connected, on_reports
from drover.controller.reads.ended_views import EndedJobViews
from drover.controller.reads.queries import Reads
from drover.controller.reads.read_worker import ReadWorker
from drover.controller.reads.views import job_info
from drover.controller.service import ControllerService, Settings
from drover.core.errors import BadRequest, NotFound
from drover.protocol.api import EventList, History, JobInfo, JobList, JobSubmission
from drover.protocol.node_channel import Exited, Hello, StartAttempt, Started
from drover.store.base import (
    EndedJobRecord,
    HistoryCursor,
    HistoryRecord,
    JobFilter,
    StoreReader,
    open_store,
)
from drover.store.faults import StoreFault
from drover.store.sqlite_reader import SqliteReader

OK = {"exit_code": 0, "signal": None, "failure": None, "timed_out": False, "terminated": False, "out_of_memory": False}


class Cluster:
    """A store and a service over it, driven through the real handlers on a fake clock; the
    node n1 (64 CPUs) runs whatever is dispatched until told how it ended."""

    def __init__(self, url: str) -> None:
        self.store = open_store(url)
        self.now = 1000.0
        self.service = ControllerService(self.store, Settings(), clock=lambda: self.now)
        self.reader_threads: set[int] = set()
        self.reads = Reads(self.service, ReadWorker(self._reader))
        self._commit(on_node_connected(self.service.state, Hello("n1", 64, 100_000, []), self.now, OrderOptions(1.0),
                                       self.store))

    def _reader(self) -> StoreReader:
        self.reader_threads.add(threading.get_ident())
        return self.store.reader()

    def _commit(self, outcome: object) -> list[StartAttempt]:
        changes = getattr(outcome, "changes", None)
        if changes:
            self.store.commit(changes)
            self.service.state.changed(changes)  # type: ignore[arg-type]
        self.now += 1
        return [e.message for e in getattr(outcome, "effects", []) if isinstance(getattr(e, "message", None), StartAttempt)]

    def submit(self, owner: str = "alice", **fields: object) -> int:
        from drover.controller.handlers.submit import submit

        spec = JobSubmission(**{"script": "true\n", "workdir": "/tmp", **fields})  # type: ignore[arg-type]
        outcome, (job,) = submit(self.service.state, [spec], owner, self.now, self.store)
        self._commit(outcome)
        return job

    def run(self, exit_codes: dict[int | str, int] | None = None) -> None:
        """Dispatch what can start; every started attempt exits with the code `exit_codes` gives
        its job or task ("JOB.INDEX"), 0 by default."""
        for order in self._commit(schedule(self.service.state, self.now, self.store, OrderOptions(1.0))):
            job, index, _ = order.attempt.split(".")
            codes = exit_codes or {}
            code = codes.get(f"{job}.{index}", codes.get(int(job), 0))
            self._commit(on_reports(self.service.state, "n1", [Started(order.attempt, 1, self.now)], self.now))
            self._commit(on_reports(self.service.state, "n1", [Exited(order.attempt, dict(OK, exit_code=code))], self.now))

    def act(self, action: str, ref: str, priority: int | None = None) -> None:
        outcome, _ = act(self.service.state, action, [ref], lambda owner, job, verb: None, self.now, self.store,
                         priority=priority)
        self._commit(outcome)

    def cancel(self, ref: str) -> None:
        self.act("cancel", ref)

    def jobs(self, **query: object) -> JobList:
        return msgspec.json.decode(asyncio.run(self.reads.jobs(JobFilter(**query))), type=JobList)  # type: ignore[arg-type]

    def history(self, limit: int, before: HistoryCursor | None = None, owner: str | None = None) -> History:
        return msgspec.json.decode(asyncio.run(self.reads.history(owner, limit, None, before)), type=History)


@pytest.fixture
def cluster(store_url: str) -> Iterator[Cluster]:
    made = Cluster(store_url)
    yield made
    made.reads.close()
    made.store.close()


def full_view(cluster: Cluster, job_id: int) -> JobInfo:
    """The job as it was shown before listings read ended jobs from aggregates."""
    job = cluster.store.load_job(job_id)
    assert job is not None
    return job_info(cluster.service.state, job)


def test_an_ended_job_is_listed_exactly_as_its_full_record_shows_it(cluster: Cluster) -> None:
    done = cluster.submit(name="done")
    failed = cluster.submit(name="failed")
    array = cluster.submit(name="array", array="1-6")
    never_ran = cluster.submit(name="never", hold=True)
    cluster.run({failed: 3, f"{array}.4": 2, f"{array}.5": 9})
    cluster.cancel(str(never_ran))
    partial = cluster.submit(name="partial", array="1-5", hold=True)
    cluster.cancel(f"{partial}.2")
    cluster.cancel(str(partial))
    listed = {info.id: info for info in cluster.jobs(include_ended=True).jobs}
    for job_id in (done, failed, array, never_ran, partial):
        assert listed[job_id] == full_view(cluster, job_id), job_id
    assert listed[failed].exit_status == 3 and listed[never_ran].state == "cancelled"
    assert listed[array].exit_status == 2 and listed[array].task_counts == {"completed": 4, "failed": 2}
    assert listed[partial].task_counts == {"cancelled": 5}


def test_a_listing_pages_newest_first_and_every_job_appears_once(cluster: Cluster) -> None:
    ended = [cluster.submit() for _ in range(7)]
    cluster.run()
    live = [cluster.submit(hold=True) for _ in range(4)]
    first = cluster.jobs(include_ended=True, limit=5)
    assert [info.id for info in first.jobs] == sorted(ended + live)[-5:]  # id order, the newest
    seen, before = [], None
    while True:
        page = cluster.jobs(include_ended=True, limit=3, before=before)
        seen = [info.id for info in page.jobs] + seen
        if page.next_before is None:
            break
        before = page.next_before
    assert seen == sorted(ended + live)
    assert cluster.jobs(include_ended=True, limit=100).next_before is None


def test_filters_apply_to_live_and_ended_jobs_alike(cluster: Cluster) -> None:
    mine = cluster.submit(owner="alice", name="a")
    theirs = cluster.submit(owner="bob", name="b")
    failed = cluster.submit(owner="bob", name="b")
    cluster.run({failed: 1})
    waiting = cluster.submit(owner="bob", name="b", hold=True)
    assert [i.id for i in cluster.jobs(include_ended=True, owner="bob").jobs] == [theirs, failed, waiting]
    assert [i.id for i in cluster.jobs(include_ended=True, name="a").jobs] == [mine]
    assert [i.id for i in cluster.jobs(include_ended=True, states=["failed", "held"]).jobs] == [failed, waiting]
    assert [i.id for i in cluster.jobs(owner="bob").jobs] == [waiting]  # without ended jobs


def test_a_job_that_ended_after_the_loop_looked_is_shown_once_as_the_store_has_it(cluster: Cluster) -> None:
    job = cluster.submit()
    query = JobFilter(include_ended=True)
    stale = cluster.reads._live_page(cluster.reads._live_candidates(query), query)
    assert [msgspec.json.decode(entry, type=JobInfo).state for _, entry in stale] == ["pending"]
    cluster.run()
    page = cluster.reads._worker  # the same thread hand-over a listing uses
    body = asyncio.run(page.run(lambda reader: cluster.reads._with_ended(reader, JobFilter(include_ended=True), stale)))
    assert [(i.id, i.state) for i in msgspec.json.decode(msgspec.json.encode(body), type=JobList).jobs] == [
        (job, "completed")]


def test_ended_entries_are_built_once_and_the_store_is_read_on_reading_threads_only(cluster: Cluster) -> None:
    cluster.submit()
    cluster.run()
    calls: list[int] = []

    class CountingReader:
        def __init__(self, reader: StoreReader) -> None:
            self.reader = reader

        def __getattr__(self, name: str) -> object:
            return getattr(self.reader, name)

        def ended_jobs(self, job_ids: object) -> list[EndedJobRecord]:
            calls.append(threading.get_ident())
            return self.reader.ended_jobs(job_ids)  # type: ignore[arg-type]

    reads = Reads(cluster.service, ReadWorker(lambda: CountingReader(cluster.store.reader())))  # type: ignore[arg-type, return-value]
    try:
        for _ in range(3):
            asyncio.run(reads.jobs(JobFilter(include_ended=True)))
    finally:
        reads.close()
    assert len(calls) == 1 and calls[0] != threading.get_ident()


def test_the_kept_entries_are_bounded_and_the_least_recently_listed_go_first() -> None:
    views = EndedJobViews(capacity=2)
    views.keep({(1, 1.0): msgspec.Raw(b"1"), (2, 2.0): msgspec.Raw(b"2")})
    assert views.found([(1, 1.0)]) == {(1, 1.0): msgspec.Raw(b"1")}  # 1 is now the most recent
    views.keep({(3, 3.0): msgspec.Raw(b"3")})
    assert len(views) == 2 and views.found([(2, 2.0)]) == {} and views.found([(1, 1.0), (3, 3.0)]).keys() == {
        (1, 1.0), (3, 3.0)}
    assert views.found([(1, 9.0)]) == {}  # a job that ended again is another entry


def test_history_pages_by_cursor_without_gaps_or_repeats(cluster: Cluster) -> None:
    jobs = [cluster.submit(owner="alice" if n % 2 else "bob") for n in range(5)]
    cluster.run()
    cluster.run()  # nothing left: no new attempts
    everything = cluster.history(100)
    assert [row.job_id for row in everything.rows] == jobs and everything.next_before is None
    seen: list[int] = []
    page = cluster.history(2)
    while True:
        seen = [row.job_id for row in page.rows] + seen
        if page.next_before is None:
            break
        from drover.controller.reads.paging import history_cursor

        page = cluster.history(2, history_cursor(page.next_before))
    assert seen == jobs
    assert [row.owner for row in cluster.history(100, owner="bob").rows] == ["bob"] * 3


def test_a_requeued_attempt_shows_as_requeued_in_the_history(cluster: Cluster) -> None:
    job = cluster.submit()
    cluster.run({job: 99})  # exit 99: requeued as a new attempt
    cluster.run()
    rows = cluster.history(10).rows
    assert [(row.attempt, row.state) for row in rows] == [(1, "requeued"), (2, "completed")]


def test_history_cursors_round_trip_and_bad_ones_are_refused() -> None:
    from drover.controller.reads.paging import history_cursor, history_token

    cursor = (1700000000.1234567, 12, 3, 2)
    assert history_cursor(history_token(cursor)) == cursor
    for bad in ("", "12", "x:1.2.3", "1.5:1.2", "nan:1.2.3", "-1:1.2.3", "1.0:1.2.x", "1.0:1.2.3.4", "inf:1.2.3"):
        with pytest.raises(BadRequest, match="query parameter before"):
            history_cursor(bad)


def test_events_are_read_off_the_loop_and_a_long_poll_wakes_on_the_next_commit(cluster: Cluster) -> None:
    job = cluster.submit()

    async def scenario() -> list[str]:
        seen = msgspec.json.decode(await cluster.reads.events(job, 0, 1000, 0), type=EventList).events
        waiting = asyncio.ensure_future(cluster.reads.events(job, seen[-1].seq, 1000, 30))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        cluster.service.act("hold", [str(job)], lambda owner, job, verb: None)
        later = msgspec.json.decode(await asyncio.wait_for(waiting, 10), type=EventList).events
        return [e.kind for e in seen + later]

    kinds = asyncio.run(scenario())
    assert kinds[0] == "submitted" and len(kinds) > 1
    assert cluster.reader_threads and threading.get_ident() not in cluster.reader_threads


def test_a_reader_cannot_write(store_url: str) -> None:
    store = open_store(store_url)
    reader = store.reader()
    try:
        with pytest.raises(Exception, match="readonly|read-only"):
            reader.db.execute("DELETE FROM jobs")  # type: ignore[attr-defined]
    finally:
        reader.close()
        store.close()


def test_a_readers_failures_name_the_file(tmp_path: Path) -> None:
    not_a_database = tmp_path / "junk.db"
    not_a_database.write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(StoreFault, match=f"{not_a_database}.*not a Drover database"):
        SqliteReader(str(not_a_database)).ended_job_keys(JobFilter(include_ended=True))


def test_a_history_record_is_shown_as_the_api_row() -> None:
    from drover.controller.reads.history_views import history_row
    from drover.core.job_state import JobState

    record = HistoryRecord(
        job_id=4, index=2, attempt=1, node="n1", exit=dict(OK, exit_code=None, signal=9), usage={"max_rss_kib": 7},
        started_at=10.0, ended_at=12.0, is_array=True, name="x", owner="alice", submitted_at=9.0,
        task_state=JobState.FAILED, task_attempt=1,
    )
    row = history_row(record)
    assert (row.exit_status, row.state, row.usage and row.usage.max_rss_kib) == (137, "failed", 7)


def test_an_ended_job_is_shown_with_every_attempt_as_the_working_set_would_show_it(cluster: Cluster) -> None:
    job = cluster.submit(array="1-3")
    cluster.run({f"{job}.2": 99})  # task 2 is requeued: a second attempt
    cluster.run({f"{job}.2": 4})
    stored = cluster.store.load_job(job)
    assert stored is not None and stored.ended_at is not None
    expected = job_info(cluster.service.state, stored, with_tasks=True, store=cluster.store)
    asked: list[tuple[str, int]] = []
    shown = asyncio.run(cluster.reads.job(job, lambda owner, job_id: asked.append((owner, job_id))))
    assert shown == expected and asked == [("alice", job)]
    assert [len(task.attempts) for task in shown.tasks] == [1, 2, 1] and shown.exit_status == 4
    with pytest.raises(NotFound, match=f"job {job + 1} does not exist"):
        asyncio.run(cluster.reads.job(job + 1, lambda owner, job_id: None))


def test_a_live_jobs_kept_entry_is_shown_until_the_job_changes(cluster: Cluster) -> None:
    job = cluster.submit(hold=True)

    def listed() -> JobInfo:
        (info,) = cluster.jobs().jobs
        assert info == job_info(cluster.service.state, cluster.service.state.jobs[job])  # never a stale entry
        return info

    assert listed().state == "held"
    assert listed().state == "held"  # the kept entry
    cluster.act("alter", str(job), priority=-5)
    assert listed().priority == -5
    cluster.act("release", str(job))
    assert listed().state == "pending"
    cluster.run()
    assert cluster.jobs().jobs == [] and cluster.jobs(include_ended=True).jobs[0].state == "completed"


def test_a_commit_while_the_long_polls_first_read_runs_wakes_it_at_once(cluster: Cluster) -> None:
    """The read runs on a thread; an event committed meanwhile must not be missed, or the poll
    would sleep out its whole wait with an answer already there."""
    job = cluster.submit()
    after = max(seq for seq, _ in cluster.store.events_of(job, 0, 1000))
    committed = threading.Event()
    real_reader = cluster._reader

    class CommitDuringFirstRead:
        def __init__(self, reader: StoreReader, loop: asyncio.AbstractEventLoop) -> None:
            self.reader, self.loop = reader, loop

        def __getattr__(self, name: str) -> object:
            return getattr(self.reader, name)

        def events_of(self, job_id: int | None, after_seq: int, limit: int) -> object:
            found = self.reader.events_of(job_id, after_seq, limit)  # nothing new yet
            if not committed.is_set():
                self.loop.call_soon_threadsafe(cluster.service.act, "hold", [str(job)], lambda *_: None)
                self.loop.call_soon_threadsafe(committed.set)
                committed.wait(5)
            return found

    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        cluster.reads.close()
        cluster.reads = Reads(cluster.service, ReadWorker(lambda: CommitDuringFirstRead(real_reader(), loop)))  # type: ignore[arg-type, return-value]
        started = loop.time()
        reply = msgspec.json.decode(await cluster.reads.events(job, after, 1000, 20), type=EventList)
        assert [e.kind for e in reply.events] == ["held"]
        return loop.time() - started

    assert asyncio.run(scenario()) < 10


def test_a_max_rss_not_known_is_shown_with_the_mark_it_stayed_under_and_no_memory_efficiency() -> None:
    """0: not known, every process of the job at or under the mark it started from (accounting.md,
    Max RSS): the API row says the mark, and no memory efficiency (no cgroup measured a peak)."""
    from drover.controller.reads.history_views import history_row
    from drover.core.job_state import JobState

    record = HistoryRecord(
        job_id=4, index=0, attempt=1, node="n1", exit=dict(OK), started_at=10.0, ended_at=12.0, is_array=False,
        usage={"user_cpu_s": 0.0, "sys_cpu_s": 0.0, "max_rss_kib": 0, "max_rss_inherited_kib": 17_000,
               "wall_s": 2.0, "containment": "subreaper"},  # type: ignore[typeddict-item]
        name="x", owner="alice", submitted_at=9.0, task_state=JobState.COMPLETED, task_attempt=1, memory_mib=1024,
    )
    row = history_row(record)
    assert row.usage is not None and (row.usage.max_rss_kib, row.usage.max_rss_inherited_kib) == (0, 17_000)
    assert row.memory_efficiency is None
    measured = replace(record, usage={**record.usage, "cgroup_peak_memory_bytes": 256 << 20})  # type: ignore[arg-type,dict-item]
    assert history_row(measured).memory_efficiency == 0.25


def test_an_attempt_stopped_before_its_job_started_shows_no_exit_status_in_the_history() -> None:
    """A promise taken back (or a dispatched task cancelled or requeued) before its job started:
    its history row shows no exit status, not the 1 of a job that could not start."""
    from drover.controller.reads.history_views import history_row
    from drover.core.job_state import JobState

    stopped = dict(OK, exit_code=None, signal=None, terminated=True)
    never_ran = HistoryRecord(
        job_id=4, index=0, attempt=1, node="n1", exit=stopped, usage=None, started_at=None, ended_at=12.0,
        is_array=False, name="x", owner="alice", submitted_at=9.0, task_state=JobState.COMPLETED, task_attempt=2,
    )
    row = history_row(never_ran)
    assert (row.state, row.exit_status, row.reason) == ("requeued", None, "Requeued")
    launch_failed = replace(never_ran, exit=dict(stopped, terminated=False, failure="no such directory"),
                            task_state=JobState.FAILED, task_attempt=1)
    assert history_row(launch_failed).exit_status == 1
