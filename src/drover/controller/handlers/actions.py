"""Cancel, hold, release, requeue, signal…: on a whole job ("12") or one task ("12.3")."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from drover.controller.effects import Outcome
from drover.controller.handlers import checkpoints
from drover.controller.handlers.lifecycle import change_fresh, change_task, end_job_if_done
from drover.controller.handlers.submit import check_queue_takes
from drover.controller.handlers.suspend_orders import change_reasons, queue_instances, task_reasons
from drover.controller.state import ControllerState
from drover.core import suspension
from drover.core.errors import BadRequest, Conflict, DroverError, NotFound
from drover.core.ids import parse_job_ref
from drover.core.job import Job, Task
from drover.core.job_state import JobState, Trigger
from drover.core.limits import PRIORITY_RANGE
from drover.core.queues import Queue
from drover.core.signals import job_signal
from drover.core.suspension import SuspendReason
from drover.protocol.api import ActionResult
from drover.protocol.node_channel import SignalAttempt
from drover.store.base import Store

RUNNING_STATES = frozenset({JobState.DISPATCHED, JobState.RUNNING, JobState.SUSPENDED})


# may_touch(owner, job_id, verb) raises Forbidden unless the caller may act on that owner's job:
# the controller's Policy.may_touch bound to the request's caller (controller/security/auth.py decides).
MayTouch = Callable[[str, int, str], None]


def act(
    state: ControllerState, action: str, refs: list[str], may_touch: MayTouch, now: float, store: Store,
    signal_name: str | None = None, priority: int | None = None, by: str | None = None, queue: Queue | None = None,
) -> tuple[Outcome, list[ActionResult]]:
    """Apply `action` to each ref the caller may touch; one ref's failure does not stop the others.
    `by`: the caller's user name, recorded in the events of a hold (`drover why` shows it).
    `queue`: for "alter", the queue the jobs move to."""
    handler = _HANDLERS.get(action)
    if action == "hold":
        def handler(st: ControllerState, out: Outcome, job: Job, tasks: list[Task], fresh: bool, now: float) -> str:
            return _hold(st, out, job, tasks, fresh, now, by)

    if action == "alter":
        def handler(st: ControllerState, out: Outcome, job: Job, tasks: list[Task], fresh: bool, now: float) -> str:
            return _alter(st, out, job, tasks, fresh, now, priority, queue)

    if action == "signal":
        order = _signal_order(signal_name)

        def handler(st: ControllerState, out: Outcome, job: Job, tasks: list[Task], fresh: bool, now: float) -> str:
            # A task whose prolog runs is signalled too: the node keeps the signal until the
            # job has started (shepherd/supervise.py, execd/attempts.py).
            return _send(st, out, job, tasks, order, "signalled", before_start=True)

    assert handler is not None, action
    outcome = Outcome()
    results: list[ActionResult] = []
    for ref in refs:
        try:
            job, tasks, fresh, unrecorded = _resolve(state, ref, store, may_touch, action)
            may_touch(job.owner, job.id, action)
            message = handler(state, outcome, job, tasks, fresh, now)
            if unrecorded is not None:
                # A never-dispatched task addressed on its own gets a record once the action holds.
                job.take_fresh(unrecorded.index)
                job.add_task(unrecorded)
                outcome.changes.job(job)
                outcome.changes.task(unrecorded)
            end_job_if_done(state, outcome, job, now)
            results.append(ActionResult(ref=ref, ok=True, message=message))
        except DroverError as error:
            results.append(ActionResult(ref=ref, ok=False, message=str(error), kind=error.kind))
    return outcome, results


def _resolve(
    state: ControllerState, ref: str, store: Store, may_touch: MayTouch, action: str
) -> tuple[Job, list[Task], bool, Task | None]:
    """The job; the task records the ref names; whether it names the never-dispatched tasks as a
    group; and, for one never-dispatched task, the record it will get if the action holds."""
    job_id, index = parse_job_ref(ref)
    if job_id not in state.jobs:
        ended = state.ended_state(job_id, store)
        if ended is None:
            raise NotFound(f"job {job_id} does not exist")
        ended_job = store.load_job(job_id)
        if ended_job is not None:  # whose it was comes first: how another's job ended is theirs to know
            may_touch(ended_job.owner, job_id, action)
        raise Conflict(f"job {job_id} has already ended ({ended})")
    job = state.jobs[job_id]
    if index is None:
        return job, list(job.tasks.values()), True, None
    if index not in job.indices:
        raise NotFound(f"job {job_id} has no task {index}")
    if index in job.tasks:
        return job, [job.tasks[index]], False, None
    if job.fresh_state.is_final:
        raise Conflict(f"task {job_id}.{index} has already ended ({job.fresh_state.value})")
    task = Task(job.id, index, job.fresh_state, job.submitted_at)
    return job, [task], False, task


def _cancel(state: ControllerState, outcome: Outcome, job: Job, tasks: list[Task], fresh: bool,
            now: float) -> str:
    cancelled = change_fresh(outcome, job, Trigger.CANCEL, now) if fresh and not job.fresh_state.is_final else 0
    signalled = promised = 0
    for task in tasks:
        if task.state in (JobState.PENDING, JobState.HELD):
            change_task(outcome, task, Trigger.CANCEL, now)
            cancelled += 1
        elif task.state in RUNNING_STATES and not task.cancel_requested:
            task.cancel_requested = True
            _stop(state, outcome, task, "cancel_requested", now)
            if _promised(state, task):
                promised += 1
            else:
                signalled += 1
    if not cancelled and not signalled and not promised:
        raise Conflict(f"{_what(job, tasks, fresh)} has nothing left to cancel")
    outcome.reschedule = True
    parts = []
    if cancelled:
        parts.append(f"{cancelled} pending cancelled")
    if promised:  # shown waiting (controller/reads/promised_view.py): its node drops it unstarted
        parts.append(f"{promised} promised taken back, cancelled once its node says so")
    if signalled:
        parts.append(f"{signalled} running asked to stop")
    return ", ".join(parts)


def _promised(state: ControllerState, task: Task) -> bool:
    """The task's attempt is a promise that has not started: it waits for the one it follows."""
    attempt = state.attempts.get((task.job_id, task.index, task.attempt))
    return (task.state is JobState.DISPATCHED and attempt is not None and attempt.after is not None
            and attempt.started_at is None)


def _hold(state: ControllerState, outcome: Outcome, job: Job, tasks: list[Task], fresh: bool,
          now: float, by: str | None = None) -> str:
    """Hold the waiting tasks, and those whose job has not started yet (DISPATCHED: the prolog
    runs): the node stops that attempt before the job starts, as for a requeue, and the task
    waits again, held, when the attempt reports (core/exit_status.classify_exit). A task whose
    job runs cannot be held, as in Slurm and Grid Engine: requeue it (drover requeue, scontrol
    requeuehold) or cancel it."""
    held = change_fresh(outcome, job, Trigger.HOLD, now, by=by) if fresh and job.fresh_state is JobState.PENDING else 0
    stopping = 0
    for task in tasks:
        if task.state is JobState.PENDING:
            change_task(outcome, task, Trigger.HOLD, now, by=by)
            held += 1
        elif task.state is JobState.DISPATCHED and not task.hold_requested and not task.cancel_requested:
            task.hold_requested = True
            if task.requeue_requested:  # stopping already: it will wait held instead
                outcome.changes.task(task)
                outcome.changes.event(now, "hold_requested", task.job_id, task.index, task.attempt)
            else:
                _stop(state, outcome, task, "hold_requested", now)
            stopping += 1
    if not held and not stopping:
        raise Conflict(f"{_what(job, tasks, fresh)} has no pending task to hold")
    parts = [f"{held} held"] if held else []
    if stopping:
        parts.append(f"{stopping} stopping before its job starts, to be held")
    return ", ".join(parts)


def _release(state: ControllerState, outcome: Outcome, job: Job, tasks: list[Task], fresh: bool,
             now: float) -> str:
    released = change_fresh(outcome, job, Trigger.RELEASE, now) if fresh and job.fresh_state is JobState.HELD else 0
    for task in tasks:
        if task.state is JobState.HELD:
            change_task(outcome, task, Trigger.RELEASE, now)
            released += 1
    if not released:
        raise Conflict(f"{_what(job, tasks, fresh)} has no held task to release")
    outcome.reschedule = True
    return f"{released} released"


def _suspend(state: ControllerState, outcome: Outcome, job: Job, tasks: list[Task], fresh: bool,
             now: float) -> str:
    """Freeze the attempt (its whole cgroup where there is one); the state moves when the node
    reports it done. A job whose checkpoint occasions have 'x' is migrated instead (checkpoint(5):
    "checkpointed, aborted and if possible migrated as soon as the job gets suspended"). A task
    its queue instance froze already is suspended on its own too, with no order: it stays
    frozen until both are undone (core/suspension.py)."""
    if checkpoints.migrates_on_suspend(job):
        return _migrate(state, outcome, job, tasks, fresh, now)
    suspended = 0
    for task in tasks:
        if task.state in (JobState.RUNNING, JobState.SUSPENDED) and SuspendReason.JOB not in task_reasons(task):
            change_reasons(state, outcome, task, suspension.suspend(task_reasons(task), SuspendReason.JOB))
            suspended += 1
    if not suspended:
        raise Conflict(f"job {job.id} has no running task")
    return f"{suspended} suspended"


def _resume(state: ControllerState, outcome: Outcome, job: Job, tasks: list[Task], fresh: bool,
            now: float) -> str:
    """Undo the job's own suspension; a task its queue instance keeps suspended stays frozen
    (Grid Engine's `s` and `S` are independent), and the answer says so."""
    resumed, kept = 0, []
    for task in tasks:
        reasons = task_reasons(task)
        if SuspendReason.JOB in reasons:
            move = suspension.resume(reasons, SuspendReason.JOB)
            change_reasons(state, outcome, task, move)
            if move.order is None:
                kept.append(task)
            else:
                resumed += 1
    held_by_queue = [task for task in tasks if task_reasons(task) == {SuspendReason.QUEUE}]
    if not resumed and not kept:
        if held_by_queue:
            raise Conflict(f"{_what(job, tasks, fresh)} is suspended by its queue instance "
                           f"({queue_instances(state, job, held_by_queue)}), not on its own: it resumes when that "
                           "is unsuspended (drover queue unsuspend, qmod -usq)")
        raise Conflict(f"job {job.id} has no suspended task")
    parts = [f"{resumed} resumed"] if resumed else []
    if kept:
        parts.append(f"{len(kept)} still suspended by its queue instance ({queue_instances(state, job, kept)}), "
                     "until that is unsuspended")
    return ", ".join(parts)


def _send(state: ControllerState, outcome: Outcome, job: Job, tasks: list[Task], order: str, done: str,
          before_start: bool = False) -> str:
    """`before_start`: send it to attempts whose job has not started yet too (DISPATCHED)."""
    sent = 0
    states = (JobState.DISPATCHED, JobState.RUNNING, JobState.SUSPENDED) if before_start else (
        JobState.RUNNING, JobState.SUSPENDED)
    for task in tasks:
        attempt = state.latest_attempt(task)
        if attempt is not None and task.state in states:
            outcome.send(attempt.node, SignalAttempt(attempt.name, order))
            sent += 1
    if not sent:
        needs = {"suspended": "running", "resumed": "suspended"}.get(done, "running or suspended")
        raise Conflict(f"job {job.id} has no {needs} task")
    return f"{sent} {done}"


def _signal_order(name: str | None) -> str:
    """The order's signal name, if it is one a job may be sent (core/signals.py)."""
    if not name:
        raise BadRequest("drover signal needs a signal name, e.g. USR1")
    return job_signal(name, "the signal").name


def _stop(state: ControllerState, outcome: Outcome, task: Task, request: str, now: float) -> None:
    """A request on a running task (recorded, logged) and the order that acts on it: the node
    stops the attempt; the state moves when the attempt reports."""
    outcome.changes.task(task)
    outcome.changes.event(now, request, task.job_id, task.index, task.attempt)
    attempt = state.latest_attempt(task)
    if attempt is not None:
        outcome.send(attempt.node, SignalAttempt(attempt.name, "terminate", stop_reason(task)))


def stop_reason(task: Task) -> str:
    """What the stop of a task's attempt means, for the node (its cleanup classifies the end as
    the controller will): a cancel wins over a hold, a hold over a requeue."""
    if task.cancel_requested:
        return "cancel"
    return "hold" if task.hold_requested else "requeue"


def _requeue(state: ControllerState, outcome: Outcome, job: Job, tasks: list[Task], fresh: bool,
             now: float) -> str:
    """Stop the running tasks (warning signal, grace, SIGKILL) and put them back in the queue
    as new attempts (scontrol requeue)."""
    asked = 0
    for task in tasks:
        if task.state in RUNNING_STATES and not task.stop_requested:
            task.requeue_requested = True
            _stop(state, outcome, task, "requeue_requested", now)
            asked += 1
    if not asked:
        raise Conflict(f"{_what(job, tasks, fresh)} has no running task to requeue")
    return f"{asked} requeued"


def _alter(state: ControllerState, outcome: Outcome, job: Job, tasks: list[Task], fresh: bool,
           now: float, priority: int | None = None, queue: Queue | None = None) -> str:
    """Change what may still change of a job that has tasks waiting: its priority, and its
    queue while none of its tasks has started (qalter -q, scontrol update Partition=)."""
    if priority is None and queue is None:
        raise BadRequest("nothing to change: give a priority or a queue")
    if priority is not None and priority not in PRIORITY_RANGE:
        raise BadRequest(f"the priority must be between {PRIORITY_RANGE.start} and {PRIORITY_RANGE.stop - 1}")
    done = []
    if queue is not None and queue.name != job.spec.queue:
        if not fresh and tasks:
            raise BadRequest(f"a queue is a whole job's: name job {job.id}, not one of its tasks")
        _check_move(job, queue)
        job.spec = msgspec.structs.replace(job.spec, queue=queue.name)
        done.append(f"queue {queue.name}")
    if priority is not None:
        job.priority = priority
        done.append(f"priority {priority}")
    outcome.changes.job(job, spec=queue is not None)
    outcome.changes.event(now, "altered", job.id, priority=priority, queue=queue.name if queue is not None else None)
    outcome.reschedule = True
    return ", ".join(done) or f"already in queue {job.spec.queue}"


def _check_move(job: Job, queue: Queue) -> None:
    """A job moves only whole, before any task of it started, into a queue that would have
    taken it: one that takes new jobs, within its memory and time limits."""
    if any(task.attempt for task in job.tasks.values()):
        raise Conflict(f"job {job.id} has tasks that started: only a job none of whose tasks ran moves to another queue")

    def bad(message: str) -> BadRequest:
        return BadRequest(f"job {job.id}: {message}")

    check_queue_takes(queue, job.resources.memory_mib, bad)
    limit = job.spec.time_limit_s
    if limit is not None and queue.max_time_s is not None and limit > queue.max_time_s:
        raise bad(f"its time limit is over queue {queue.name}'s max_time_s ({queue.max_time_s} s)")


def _checkpoint(state: ControllerState, outcome: Outcome, job: Job, tasks: list[Task], fresh: bool,
                now: float) -> str:
    """Checkpoint the job: in its checkpoint environment (its shepherd runs the ckpt_command or
    sends the environment's signal), else deliver its checkpoint signal (GE's checkpointing
    interface: the job saves its state)."""
    if job.spec.checkpoint:
        return _send(state, outcome, job, tasks, "checkpoint", "asked to checkpoint")
    name = job.spec.checkpoint_signal
    if not name:
        raise Conflict(f"job {job.id} has no checkpoint signal (submit it with --checkpoint-signal) or checkpoint "
                       "environment (--checkpoint NAME)")
    return _send(state, outcome, job, tasks, name, "asked to checkpoint")


def _migrate(state: ControllerState, outcome: Outcome, job: Job, tasks: list[Task], fresh: bool,
             now: float) -> str:
    """Checkpoint the running tasks (migr_command or the signal), stop them and put them back in
    the queue as new attempts, which restart from the checkpoint (GE's migration)."""
    if not job.spec.checkpoint:
        raise Conflict(f"job {job.id} has no checkpoint environment: only a checkpointing job migrates "
                       "(submit it with --checkpoint NAME); drover requeue runs a job again from its start")
    asked = sum(1 for task in tasks if migrate_task(state, outcome, task, now))
    if not asked:
        raise Conflict(f"{_what(job, tasks, fresh)} has no running task to migrate")
    return f"{asked} migrating"


def migrate_task(state: ControllerState, outcome: Outcome, task: Task, now: float) -> bool:
    """Ask a running task's node to migrate its attempt; False if it is not running or is being
    stopped already."""
    if task.state is not JobState.RUNNING or task.stop_requested:
        return False
    task.requeue_requested = True
    outcome.changes.task(task)
    outcome.changes.event(now, "migrate_requested", task.job_id, task.index, task.attempt)
    attempt = state.latest_attempt(task)
    if attempt is not None:
        outcome.send(attempt.node, SignalAttempt(attempt.name, "migrate", stop_reason(task)))
    return True


def _what(job: Job, tasks: list[Task], fresh: bool) -> str:
    return f"job {job.id}" if fresh or not tasks else f"task {job.id}.{tasks[0].index}"


_Handler = Callable[[ControllerState, Outcome, Job, list[Task], bool, float], str]
_HANDLERS: dict[str, _Handler] = {
    "cancel": _cancel, "hold": _hold, "release": _release, "suspend": _suspend, "resume": _resume,
    "checkpoint": _checkpoint, "requeue": _requeue, "migrate": _migrate,
}
ACTIONS = (*_HANDLERS, "signal", "alter")
