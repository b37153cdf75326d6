"""A job's dependencies against the working set: what they wait for, and ending a job whose
dependencies can never be met (its --kill-on-invalid-dep). The semantics are core/dependencies.py's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from drover.controller.effects import Outcome
from drover.controller.handlers.lifecycle import change_fresh, change_task, end_job_if_done
from drover.controller.state import ControllerState
from drover.core.dependencies import (
    Evaluation,
    Progress,
    Verdict,
    evaluate,
    never_text,
    waiting_text,
)
from drover.core.job import Job
from drover.core.job_state import JobState, Trigger
from drover.store.base import Store


@dataclass(frozen=True, slots=True)
class JobWait:
    """What a job's dependencies say in this pass."""

    verdict: Verdict  # for the job as a whole: MET when some task may start
    text: str = ""  # what it waits for, or why it never will
    blocked: frozenset[int] = frozenset()  # pending tasks whose own (aftercorr) dependencies are not met


class ProgressLookup:
    """Progress of the jobs and tasks dependencies name, for one pass: live jobs from the working
    set, ended ones from the store (read once a pass)."""

    def __init__(self, state: ControllerState, store: Store) -> None:
        self.state, self.store = state, store
        self._ended: dict[int, Job | None] = {}

    def __call__(self, job_id: int, task: int | None) -> Progress | None:
        job = self.state.jobs.get(job_id)
        if job is None:
            ended = self.state.ended_state(job_id, self.store)
            if ended is None:
                return None
            if task is None:
                return Progress(True, ended)
            if job_id not in self._ended:
                self._ended[job_id] = self.store.load_job(job_id)
            job = self._ended[job_id]
            if job is None:
                return None
        if task is None:  # a live job: it has not ended; it started if any task was dispatched
            return Progress(any(record.attempt > 0 for record in job.tasks.values()))
        record = job.tasks.get(task)
        if record is not None:
            return Progress(record.attempt > 0, record.state.value if record.state.is_final else None)
        if task not in job.indices:
            return None
        return Progress(False, job.fresh_state.value if job.fresh_state.is_final else None)


def job_wait(job: Job, pending: list[int], progress: Callable[[int, int | None], Progress | None],
             singleton_free: bool) -> JobWait:
    """`pending`: the job's pending task indices, read only for dependencies task by task."""
    dependencies = job.dependencies
    if not any(dependency.per_task for dependency in dependencies.on):
        return _as_wait(evaluate(dependencies, progress, 0, singleton_free), dependencies.any)
    first: Evaluation | None = None
    blocked: set[int] = set()
    never = 0
    for index in pending:
        found = evaluate(dependencies, progress, index, singleton_free)
        if found.verdict is not Verdict.MET:
            blocked.add(index)
            never += found.verdict is Verdict.NEVER
            first = first or found
    if first is None:
        return JobWait(Verdict.MET)
    wait = _as_wait(first, dependencies.any)
    if never == len(pending):
        return JobWait(Verdict.NEVER, wait.text, frozenset(blocked))
    verdict = Verdict.WAITING if len(blocked) == len(pending) else Verdict.MET
    return JobWait(verdict, wait.text, frozenset(blocked))


def _as_wait(found: Evaluation, any_: bool) -> JobWait:
    if found.verdict is Verdict.NEVER:
        return JobWait(Verdict.NEVER, never_text(found.never))
    if found.verdict is Verdict.WAITING:
        return JobWait(Verdict.WAITING, waiting_text(found.waiting_on, any_))
    return JobWait(Verdict.MET)


def cancel_for_dependency(state: ControllerState, outcome: Outcome, job: Job, why: str, now: float) -> None:
    """sbatch --kill-on-invalid-dep=yes: its dependencies can never be met, so the job's waiting
    tasks are cancelled, with the reason kept on the job and in the event log."""
    reason = f"cancelled: its dependency can never be met ({why})"
    job.end_reason = reason
    outcome.changes.job(job)
    outcome.changes.event(now, "dependency_never_satisfied", job.id, reason=why)
    if job.fresh_state in (JobState.PENDING, JobState.HELD):
        change_fresh(outcome, job, Trigger.CANCEL, now)
    for task in job.tasks.values():
        if task.state in (JobState.PENDING, JobState.HELD):
            change_task(outcome, task, Trigger.CANCEL, now, reason=reason)
    state.pending_reasons.pop(job.id, None)
    end_job_if_done(state, outcome, job, now)
    outcome.reschedule = True  # jobs that depend on this one see it cancelled
