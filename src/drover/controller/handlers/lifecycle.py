"""The steps every handler shares: change a task's state (through the table), give back what an
attempt held, end a job once all its tasks are final, and fail a job the controller could not
handle."""

from __future__ import annotations

from typing import Any

from drover.controller.effects import JobEnded, Outcome, SendMail
from drover.controller.handlers import promises
from drover.controller.state import ControllerState
from drover.core.job import Attempt, Job, Task
from drover.core.job_state import JobState, Trigger, next_state
from drover.core.node import Node
from drover.core.node_state import NodeState, NodeTrigger
from drover.core.views import job_state
from drover.protocol.node_channel import SignalAttempt

# The event each trigger writes to a job's event log, in the words of HTCondor's user log.
EVENT_OF_TRIGGER = {
    Trigger.HOLD: "held", Trigger.RELEASE: "released", Trigger.DISPATCH: "dispatched",
    Trigger.START: "started", Trigger.SUSPEND: "suspended", Trigger.RESUME: "resumed",
    Trigger.EXIT: "exited", Trigger.REQUEUE: "requeued", Trigger.ERROR_HOLD: "held_in_error",
    Trigger.SUCCEED: "completed", Trigger.FAIL: "failed", Trigger.TIME_OUT: "timed_out",
    Trigger.RUN_OUT_OF_MEMORY: "out_of_memory", Trigger.CANCEL: "cancelled", Trigger.LOSE_NODE: "node_failed",
    Trigger.INTERNAL_ERROR: "failed",
}
assert set(EVENT_OF_TRIGGER) == set(Trigger)


def change_task(
    outcome: Outcome, task: Task, trigger: Trigger, now: float, job: Job | None = None, **detail: Any
) -> JobState:
    """Apply `trigger` to `task` (raises IllegalTransition if the table forbids it) and log it."""
    before = task.state
    after = task.apply(trigger, now)
    outcome.changes.task(task)
    if trigger is Trigger.START and job is not None:
        _mail_on_start(outcome, job, task)
    outcome.changes.event(
        now, EVENT_OF_TRIGGER[trigger], task.job_id, task.index, task.attempt or None,
        trigger=trigger.value, before=before.value, after=after.value, **detail,
    )
    return after


def start_before_end(outcome: Outcome, job: Job, task: Task, attempt: Attempt, started_at: float | None,
                     now: float, learned_from: str) -> None:
    """An attempt whose end is being recorded while its task is still DISPATCHED: where its
    node's end report says when its job started, that start was never recorded. Its Started
    report was lost (with a controller killed or failed over between the two: a node sends it
    once, and nothing to a controller that is not there) or never sent (a job that ended before
    its node saw it start). The task starts first, at the node's time, so that no attempt ends
    without its one `started` event; a start that comes after the end is not recorded (the task
    has moved on), nor one sent again (the end is recorded once). An attempt that never ran
    (core/accounting.never_ran: a promise taken back, a stop during its prolog, a launch
    failure) has no start time in its report, and gets no `started` event."""
    if started_at is None or task.state is not JobState.DISPATCHED:
        return
    promised = {"promised": True} if attempt.after is not None else {}  # the metrics count it as it starts
    # A node's clock a little ahead of the controller's puts no start after the end it is recorded with.
    change_task(outcome, task, Trigger.START, min(started_at, now), job, learned_from=learned_from, **promised)


def change_fresh(outcome: Outcome, job: Job, trigger: Trigger, now: float, **detail: Any) -> int:
    """Apply `trigger` to the job's never-dispatched tasks as a group; return how many there are."""
    count = job.fresh_count
    if count:
        before = job.fresh_state
        job.fresh_state = next_state(job.fresh_state, trigger)
        outcome.changes.job(job)
        outcome.changes.event(
            now, EVENT_OF_TRIGGER[trigger], job.id, trigger=trigger.value, before=before.value,
            after=job.fresh_state.value, tasks=count, **detail,
        )
    return count


def release_attempt(state: ControllerState, job: Job, task: Task) -> None:
    """The task's latest attempt no longer holds its node's CPUs and memory (a parallel job's,
    on each of its nodes)."""
    attempt = state.latest_attempt(task)
    if attempt is None:
        return
    promises.give_back(state, job, attempt)  # and a promised attempt that follows it takes the room


def _mail_on_start(outcome: Outcome, job: Job, task: Task) -> None:
    """BEGIN mail: for a job when it starts; for an array when its first task starts (or for
    every task with ARRAY_TASKS)."""
    types, to = job.spec.mail_type, job.spec.mail_user
    if not to or "BEGIN" not in types:
        return
    first = task.attempt == 1 and not any(
        t is not task and t.attempt and t.state is not JobState.DISPATCHED for t in job.tasks.values()
    )
    if job.is_array and not (first or "ARRAY_TASKS" in types):
        return
    label = f"{job.id}.{task.index}" if job.is_array and "ARRAY_TASKS" in types else str(job.id)
    subject = f"Drover job {label} ({job.name}) started"
    outcome.effects.append(SendMail(job.id, to, subject, subject + ".\n"))


def _mail_array_end(outcome: Outcome, job: Job) -> None:
    """jobd's "mail when the last job of a queue finishes": one mail for a whole array."""
    types, to = job.spec.mail_type, job.spec.mail_user
    if not job.is_array or not to or "ARRAY_TASKS" in types:
        return
    failed = job.state is not JobState.COMPLETED
    if not ("END" in types or (failed and "FAIL" in types)):
        return
    counts = ", ".join(f"{n} {s}" for s, n in sorted(job.task_counts().items()))
    subject = f"Drover array job {job.id} ({job.name}) {'failed' if failed else 'ended'}"
    outcome.effects.append(SendMail(job.id, to, subject,
                                    f"{subject}.\n\ntasks          {counts}\n"))


def end_job_if_done(state: ControllerState, outcome: Outcome, job: Job, now: float) -> None:
    if not job.is_done or job.ended_at is not None:
        return
    job.ended_at = now
    job.state = JobState(job_state(job.task_counts()))
    outcome.changes.job(job)
    outcome.changes.event(now, "job_ended", job.id, state=job.state.value)
    state.remove_job(job.id)
    for task in job.tasks.values():
        state.attempts.pop((job.id, task.index, task.attempt), None)
    state.ended_states[job.id] = job.state.value
    state.pending_reasons.pop(job.id, None)
    outcome.effects.append(JobEnded(job.id, job.spec.queue, job.owner, job.spec.mail_user,
                                    job.name, job.state.value))
    _mail_array_end(outcome, job)
    outcome.reschedule = True  # jobs that depend on this one may now start (or never)


def fail_job(state: ControllerState, outcome: Outcome, job_id: int, now: float, reason: str) -> None:
    """The controller could not handle this job (an internal error, said in `reason`): every
    task of it that has not ended fails, its never-dispatched tasks too, and the job ends FAILED
    with the reason. Attempts that may still run are told to stop, as attempts the controller
    gave up on; what they held is free at once, as for a lost node. A job that ended already
    gets the event only."""
    outcome.changes.event(now, "internal_error", job_id, error=reason)
    job = state.jobs.get(job_id)
    if job is None:
        return
    job.end_reason = reason
    outcome.changes.job(job)
    if not job.fresh_state.is_final:
        change_fresh(outcome, job, Trigger.INTERNAL_ERROR, now)
    for task in job.tasks.values():
        if task.state.is_final:
            continue
        if task.state.is_active:
            attempt = state.latest_attempt(task)
            if attempt is not None and task.state is not JobState.COMPLETING:  # COMPLETING: the job exited
                outcome.send(attempt.node, SignalAttempt(attempt.name, "terminate", "stray"))
            release_attempt(state, job, task)
        change_task(outcome, task, Trigger.INTERNAL_ERROR, now, reason=reason)
    end_job_if_done(state, outcome, job, now)


def drained_if_idle(outcome: Outcome, node: Node, now: float) -> None:
    """A draining node that runs nothing any more is DRAINED."""
    if node.state is NodeState.DRAINING and node.running == 0:
        node.apply(NodeTrigger.IDLE)
        outcome.changes.node(node)
        outcome.changes.event(now, "node_drained", node=node.name, reason=node.drain)
