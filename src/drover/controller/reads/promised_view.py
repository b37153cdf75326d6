"""How a promised task shows to its user: waiting. Read-only.

A task promised the room of a running attempt (controller/handlers/promises.py) is DISPATCHED in
the store, for its node holds its order; but it has not started, and may not for hours: a Grid
Engine or Slurm user expects such a job in the queue's waiting column (qw, PD), not among the
running ones. Every read the API gives (a job's state and task counts, each task's state, the
reason it waits, the metrics) shows it as pending, with the reason `promised`; the state machine
and the accounting of its room are left as they are.
"""

from __future__ import annotations

from drover.controller.state import ControllerState
from drover.core.job import Attempt, Job, Task
from drover.core.job_state import JobState
from drover.scheduler.reasons import PendingReason, Waiting

PENDING = JobState.PENDING.value
DISPATCHED = JobState.DISPATCHED.value


def is_promised(task: Task, attempt: Attempt | None) -> bool:
    """Whether `attempt`, the task's latest, is a promise whose job has not started."""
    return (attempt is not None and task.state is JobState.DISPATCHED and attempt.number == task.attempt
            and attempt.after is not None and attempt.started_at is None and attempt.ended_at is None)


def promised_attempts(state: ControllerState, job: Job) -> list[Attempt]:
    """The job's promised attempts whose tasks have not started, in task order. Looks only at
    its dispatched tasks: a few, however long the array."""
    found = []
    for task in job.tasks.values():
        if task.state is JobState.DISPATCHED:
            attempt = state.attempts.get((job.id, task.index, task.attempt))
            if attempt is not None and is_promised(task, attempt):
                found.append(attempt)
    found.sort(key=lambda attempt: attempt.index)
    return found


def shown_counts(counts: dict[str, int], promised: int) -> dict[str, int]:
    """Task counts (Job.task_counts) as the user sees them: `promised` of the dispatched ones wait."""
    if not promised:
        return counts
    shown = dict(counts)
    left = shown.get(DISPATCHED, 0) - promised
    if left > 0:
        shown[DISPATCHED] = left
    else:
        shown.pop(DISPATCHED, None)
    shown[PENDING] = shown.get(PENDING, 0) + promised
    return shown


def shown_task_counts(state: ControllerState, job: Job) -> dict[str, int]:
    counts = job.task_counts()
    if not counts.get(DISPATCHED):
        return counts
    return shown_counts(counts, len(promised_attempts(state, job)))


def shown_task_state(task: Task, latest: Attempt | None) -> str:
    """A task's state as shown: a promised one is pending."""
    return PENDING if is_promised(task, latest) else task.state.value


def promised_reason(promised: list[Attempt]) -> Waiting | None:
    """Why a job whose only waiting tasks are promised waits: for the attempt each follows."""
    if not promised:
        return None
    first = promised[0]
    if len(promised) == 1:
        detail = f"promised: starts on {first.node} the moment attempt {first.after} ends there"
    else:
        detail = (f"{len(promised)} tasks promised: each starts on its node the moment the attempt "
                  f"it follows ends there (the first on {first.node}, after attempt {first.after})")
    return Waiting(PendingReason.PROMISED, detail)


def shown_reason(state: ControllerState, job: Job, promised: list[Attempt] | None = None) -> Waiting | None:
    """The reason a live job waits: the planner's, else that its tasks are promised."""
    if job.ended_at is not None:
        return None
    planned = state.pending_reasons.get(job.id)
    if planned is not None:
        return planned
    return promised_reason(promised if promised is not None else promised_attempts(state, job))


def promised_only(state: ControllerState) -> set[int]:
    """The live jobs with a promised task and no reason of the planner's: those that wait only
    for the attempts their tasks follow. Goes over the live attempts, not the tasks."""
    found = set()
    for attempt in state.attempts.values():
        if attempt.after is None or attempt.started_at is not None or attempt.job_id in state.pending_reasons:
            continue
        job = state.jobs.get(attempt.job_id)
        task = job.tasks.get(attempt.index) if job is not None else None
        if job is not None and task is not None and job.ended_at is None and is_promised(task, attempt):
            found.add(job.id)
    return found
