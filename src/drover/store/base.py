"""The store interface in domain terms. The SQLite and PostgreSQL backends implement it."""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from typing import Any, Protocol

from drover.core.accounting import AccountingFacts, GroupSummary
from drover.core.job import Attempt, Job, JobPayload, Task
from drover.core.job_state import JobState
from drover.core.node import Node
from drover.core.queues import QueueRecord
from drover.records import ExitStatus, GivenUpStep, Usage


@dataclass(slots=True)
class EventRecord:
    time: float
    kind: str
    job_id: int | None = None
    index: int | None = None
    attempt: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    seq: int = 0  # the event log's sequence number, set by the store when it commits the event


@dataclass(frozen=True, slots=True)
class SubmissionKey:
    """A client's name for one submission (its request key), with the ids the submission got:
    the same key from the same owner again gets these ids, whichever controller answers."""

    owner: str
    key: str
    job_ids: tuple[int, ...]
    submitted_at: float


@dataclass(slots=True)
class Changes:
    """What one handler changed: written in one transaction, before anyone is told."""

    new_jobs: list[Job] = field(default_factory=list)
    jobs: dict[int, Job] = field(default_factory=dict)  # changed scalars (fresh range, end)
    tasks: dict[tuple[int, int], Task] = field(default_factory=dict)
    attempts: dict[tuple[int, int, int], Attempt] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    events: list[EventRecord] = field(default_factory=list)
    # Cleanup steps a node gave up after the attempt left the working set (its job ended): added
    # to the stored attempt's cleanup record (core.job.with_given_up), which nothing else rewrites.
    given_up: dict[tuple[int, int, int], list[GivenUpStep]] = field(default_factory=dict)
    queues: dict[str, QueueRecord | None] = field(default_factory=dict)  # None: the queue is removed
    specs: set[int] = field(default_factory=set)  # of `jobs`, those whose spec changed too (a move to another queue)
    # The request keys of the submissions among `new_jobs`: committed with their jobs, so that a
    # submission sent again after its answer was lost makes no second copy, even once the
    # controller that took it is gone.
    submissions: list[SubmissionKey] = field(default_factory=list)
    # The payloads of `new_jobs` (script, environment, staged files): written with them into a
    # table of their own, and held nowhere else once committed.
    payloads: dict[int, JobPayload] = field(default_factory=dict)

    def job(self, job: Job, spec: bool = False) -> None:
        self.jobs[job.id] = job
        if spec:
            self.specs.add(job.id)

    def task(self, task: Task) -> None:
        self.tasks[task.job_id, task.index] = task

    def attempt(self, attempt: Attempt) -> None:
        self.attempts[attempt.job_id, attempt.index, attempt.number] = attempt

    def node(self, node: Node) -> None:
        self.nodes[node.name] = node

    def queue(self, name: str, record: QueueRecord | None) -> None:
        self.queues[name] = record

    def event(self, time: float, kind: str, job_id: int | None = None, index: int | None = None,
              attempt: int | None = None, **detail: Any) -> None:
        self.events.append(EventRecord(time, kind, job_id, index, attempt, detail))

    def given_up_step(self, job_id: int, index: int, number: int, step: GivenUpStep) -> None:
        self.given_up.setdefault((job_id, index, number), []).append(step)

    def __bool__(self) -> bool:
        return bool(self.new_jobs or self.jobs or self.tasks or self.attempts or self.nodes or self.events
                    or self.given_up or self.queues or self.submissions or self.payloads)

    def merge(self, later: Changes) -> None:
        """Add what a later handler changed, as if one handler had made both: of a record both
        name, the later one is written; events keep their order; steps given up add up."""
        self.new_jobs.extend(later.new_jobs)
        self.jobs.update(later.jobs)
        self.tasks.update(later.tasks)
        self.attempts.update(later.attempts)
        self.nodes.update(later.nodes)
        self.events.extend(later.events)
        for key, steps in later.given_up.items():
            self.given_up[key] = [*self.given_up.get(key, ()), *steps]
        self.queues.update(later.queues)
        self.specs |= later.specs
        self.submissions.extend(later.submissions)
        self.payloads.update(later.payloads)

    # Every field that belongs to a job is named by the job's id in the three methods below (a
    # test holds each field to it): a job set aside must leave nothing behind. Every field is
    # merged by `merge` above. A submission's key belongs to all its jobs: a submission is all or
    # nothing (its scope is not per job), so its jobs are never parted; were one of them set
    # aside, the key would go with it, and were they split, it goes with the first.

    def job_ids(self) -> set[int]:
        """Every job these changes touch."""
        return ({job.id for job in self.new_jobs} | set(self.jobs) | {key[0] for key in self.tasks}
                | {key[0] for key in self.attempts} | {key[0] for key in self.given_up} | self.specs
                | {event.job_id for event in self.events if event.job_id is not None}
                | {job_id for submission in self.submissions for job_id in submission.job_ids}
                | set(self.payloads))

    def drop_jobs(self, job_ids: Set[int]) -> None:
        """Forget what these jobs changed; the nodes' and the jobless events stay."""
        self.new_jobs = [job for job in self.new_jobs if job.id not in job_ids]
        self.jobs = {key: job for key, job in self.jobs.items() if key not in job_ids}
        self.tasks = {key: task for key, task in self.tasks.items() if key[0] not in job_ids}
        self.attempts = {key: attempt for key, attempt in self.attempts.items() if key[0] not in job_ids}
        self.given_up = {key: steps for key, steps in self.given_up.items() if key[0] not in job_ids}
        self.specs = self.specs - job_ids
        self.events = [event for event in self.events if event.job_id not in job_ids]
        self.submissions = [submission for submission in self.submissions
                            if job_ids.isdisjoint(submission.job_ids)]
        self.payloads = {key: payload for key, payload in self.payloads.items() if key not in job_ids}

    def by_job(self) -> tuple[Changes, dict[int, Changes]]:
        """The changes split in one part per job, and what belongs to no job (nodes, and the
        events of none): each part can be committed on its own."""
        common = Changes(nodes=self.nodes, queues=self.queues)
        parts: dict[int, Changes] = {}

        def part(job_id: int) -> Changes:
            found = parts.get(job_id)
            if found is None:
                found = parts[job_id] = Changes()
            return found

        for job in self.new_jobs:
            part(job.id).new_jobs.append(job)
        for job_id, job in self.jobs.items():
            part(job_id).jobs[job_id] = job
        for task_key, task in self.tasks.items():
            part(task_key[0]).tasks[task_key] = task
        for attempt_key, attempt in self.attempts.items():
            part(attempt_key[0]).attempts[attempt_key] = attempt
        for step_key, steps in self.given_up.items():
            part(step_key[0]).given_up[step_key] = steps
        for job_id in self.specs:
            part(job_id).specs.add(job_id)
        for job_id, payload in self.payloads.items():
            part(job_id).payloads[job_id] = payload
        for event in self.events:
            (common if event.job_id is None else part(event.job_id)).events.append(event)
        for submission in self.submissions:
            (part(submission.job_ids[0]) if submission.job_ids else common).submissions.append(submission)
        return common, parts


@dataclass(slots=True)
class WorkingSet:
    """Everything the controller keeps in memory: jobs not yet ended, their tasks, live attempts."""

    jobs: dict[int, Job]
    attempts: dict[tuple[int, int, int], Attempt]  # the latest attempt of every task with one
    nodes: dict[str, Node]
    next_job_id: int
    queues: dict[str, QueueRecord] = field(default_factory=dict)  # what changed of drover.toml's, and users' own


@dataclass(slots=True)
class JobFilter:
    states: Sequence[str] = ()
    owner: str | None = None
    name: str | None = None
    include_ended: bool = False
    ended_since: float | None = None
    limit: int = 1000
    before: int | None = None  # only jobs with a lower id: the next page of a listing, newest first


@dataclass(slots=True)
class EndedJobRecord:
    """What a listing shows of an ended job, without loading its task records."""

    job: Job  # its `tasks` left empty
    task_counts: dict[str, int]  # state -> number of task records (never-dispatched tasks are the job's fresh ones)
    first_unfinished: Task | None  # the task record with the lowest index that did not complete


@dataclass(slots=True)
class HistoryRecord:
    """One ended attempt, with what the history shows of its job and task."""

    job_id: int
    index: int
    attempt: int
    node: str
    exit: ExitStatus | None
    usage: Usage | None
    started_at: float | None
    ended_at: float
    is_array: bool
    name: str
    owner: str
    submitted_at: float
    task_state: JobState
    task_attempt: int  # the task's latest attempt: an earlier one was requeued
    # The accounting record (migration 0014): what the job asked for and where it ran, as it was
    # when the attempt ended. `state` is the attempt's own: its task's, or "requeued".
    state: str = ""
    queue: str = "default"
    eligible_at: float | None = None  # the later of submission, begin time and the previous attempt's end
    cpus: int = 1
    memory_mib: int = 0
    time_limit_s: int | None = None
    priority: int = 0
    end_reason: str | None = None  # why the controller ended the job itself


@dataclass(slots=True, frozen=True)
class HistoryFilter:
    """Which ended attempts a history query reads; every field None or empty matches all."""

    owner: str | None = None
    queue: str | None = None
    node: str | None = None
    states: tuple[str, ...] = ()  # the attempt's state: a final task state, or "requeued"
    name: str | None = None  # a glob (`*`, `?`, `[...]`), matched case-sensitively
    since: float | None = None  # ended at or after
    until: float | None = None  # ended before
    job_id: int | None = None


HistoryCursor = tuple[float, int, int, int]  # (ended_at, job id, task index, attempt): where a page ends


class Store(Protocol):
    def load_working_set(self) -> WorkingSet: ...

    def commit(self, changes: Changes) -> None: ...

    def load_job(self, job_id: int) -> Job | None:
        """A job with all its task records, whether it ended or not."""

    def load_nodes(self) -> dict[str, Node]:
        """Every node as stored (what is derived from live attempts left empty)."""

    def load_queues(self) -> dict[str, QueueRecord]:
        """Every queue's record: its switches and changed settings, and the queues users made."""

    def purge_ended(self, before: float, limit: int) -> list[int]:
        """Forget at most `limit` jobs ended before `before` (oldest first) with everything of
        them, in one transaction; returns their ids."""

    def recent_submissions(self, limit: int) -> list[SubmissionKey]:
        """The request keys of the newest `limit` submissions that had one, the oldest first."""

    def prune_submissions(self, keep: int) -> int:
        """Forget the request keys of all but the newest `keep` submissions (those submitted at
        the same instant as the oldest kept one stay too); returns how many went."""

    def ended_job_states(self, job_ids: Sequence[int]) -> dict[int, str]: ...

    def job_payloads(self, job_ids: Sequence[int]) -> dict[int, JobPayload]:
        """The payloads of these jobs (script, environment, staged files), each read once; a
        job without one (no such job) is left out."""

    def list_ended_jobs(self, query: JobFilter) -> list[Job]: ...

    def attempts_of(self, job_id: int) -> list[Attempt]: ...

    def attempt_nodes(self, keys: Sequence[tuple[int, int, int]]) -> dict[tuple[int, int, int], str]:
        """The node each of these attempts (job, task, attempt) was sent to; an attempt the store
        does not hold is left out."""

    def events_of(self, job_id: int | None, after_seq: int, limit: int) -> list[tuple[int, EventRecord]]: ...

    def reader(self) -> StoreReader:
        """A read-only view of the same store for the calling thread alone (it must not be
        handed to another thread)."""

    def close(self) -> None: ...


class StoreReader(Protocol):
    """The reads that run off the controller's event loop. Each sees committed transactions only."""

    def ended_job_keys(self, query: JobFilter) -> list[tuple[int, float]]: ...

    def ended_jobs(self, job_ids: Sequence[int]) -> list[EndedJobRecord]: ...

    def history(self, owner: str | None, limit: int, since: float | None,
                before: HistoryCursor | None = None, where: HistoryFilter | None = None) -> list[HistoryRecord]:
        """Ended attempts, newest first; `owner` and `since`, if set, narrow `where`."""

    def accounting_facts(self, where: HistoryFilter) -> list[AccountingFacts]:
        """Every ended attempt `where` selects, as a summary reads it (from the indexes)."""

    def history_summary(self, by: str, where: HistoryFilter) -> list[GroupSummary]:
        """The ended attempts `where` selects, summarised per user, queue, node or day."""

    def events_of(self, job_id: int | None, after_seq: int, limit: int) -> list[tuple[int, EventRecord]]: ...

    def load_job(self, job_id: int) -> Job | None: ...

    def attempts_of(self, job_id: int) -> list[Attempt]: ...

    def close(self) -> None: ...


def open_store(url: str, sqlite_synchronous: str = "NORMAL") -> Store:
    """`sqlite:///path/to/db` (the default backend) or `postgresql://user@host:port/database`.
    Each backend is imported lazily, by name: psycopg only when a PostgreSQL store is opened."""
    from drover.store.urls import backend_of, sqlite_path

    if backend_of(url) == "sqlite":
        from drover.store.sqlite import SqliteStore

        return SqliteStore(sqlite_path(url), synchronous=sqlite_synchronous)
    from drover.store.postgres import PostgresStore

    return PostgresStore(url)
