"""A task's reasons to be frozen (core/suspension.py) as the controller keeps them: read (a task
suspended before they were kept has its own), changed, and turned into the order its attempt
takes. Shared by a job's own suspend and resume (actions.py) and its queue instance's
(queue_suspension.py)."""

from __future__ import annotations

from drover.controller.effects import Outcome
from drover.controller.state import ControllerState
from drover.core import suspension
from drover.core.job import Job, Task
from drover.core.job_state import JobState
from drover.core.suspension import SuspendReason
from drover.protocol.node_channel import SignalAttempt


def task_reasons(task: Task) -> suspension.Reasons:
    """Its reasons to be frozen; a task suspended before they were kept was suspended on its own."""
    if not task.suspended_by and task.state is JobState.SUSPENDED:
        return frozenset({SuspendReason.JOB})
    return task.suspended_by


def change_reasons(state: ControllerState, outcome: Outcome, task: Task, move: suspension.Move) -> None:
    """Keep the task's new reasons, and send its attempt the order they take, if any: only to a
    job that started (one still in its prolog gets it when it starts: node_reports._started)."""
    task.suspended_by = move.reasons
    outcome.changes.task(task)
    attempt = state.latest_attempt(task)
    if move.order is not None and attempt is not None and task.state in (JobState.RUNNING, JobState.SUSPENDED):
        outcome.send(attempt.node, SignalAttempt(attempt.name, move.order))


def queue_instances(state: ControllerState, job: Job, tasks: list[Task]) -> str:
    """The queue instances (queue@node) of the tasks' attempts: "default@n1"."""
    queue = job.spec.queue
    nodes = sorted({attempt.node for task in tasks if (attempt := state.latest_attempt(task)) is not None})
    return ", ".join(f"{queue}@{node}" for node in nodes)
