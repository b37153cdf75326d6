"""Suspending queue instances (Grid Engine's qmod -sq and -usq; `drover queue suspend|unsuspend
NAME[@NODE]`): a queue on one node, or on every node it has, stops its running jobs there and
starts none of its jobs there until it is unsuspended. Other queues' jobs are not touched.

Each job of the queue running there is frozen by the queue's suspend method, as a job's own
suspend freezes it; a job whose checkpoint environment has the `x` occasion is migrated instead
(checkpoint(5): "as soon as the job gets suspended (manually as well as automatically)"). A
task keeps "queue" among its reasons to be frozen (core/suspension.py), so unsuspending thaws
only the tasks nothing else keeps frozen. Who may: an operator; the queue's owner only where
every job it freezes or thaws is their own (another user's running job is an operator's to
suspend, as with `drover suspend`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from drover.config_schema import QueueSection
from drover.controller.effects import Outcome
from drover.controller.handlers import checkpoints
from drover.controller.handlers.actions import migrate_task
from drover.controller.handlers.queues import may_manage, queue_named
from drover.controller.handlers.suspend_orders import change_reasons, task_reasons
from drover.controller.state import ControllerState
from drover.core import suspension
from drover.core.errors import BadRequest, Conflict, Forbidden, NotFound
from drover.core.job import Job, Task
from drover.core.job_state import JobState
from drover.core.queues import Queue
from drover.core.shown_text import check_reason
from drover.core.suspension import SuspendReason

# The states of a task whose attempt a queue instance's suspension touches: its job runs, or is
# about to (its prolog runs: it is frozen as it starts).
_LIVE = (JobState.DISPATCHED, JobState.RUNNING, JobState.SUSPENDED)


def suspend(state: ControllerState, sections: Mapping[str, QueueSection], name: str, node: str | None,
            reason: str, user: str, is_admin: bool, now: float) -> Outcome:
    """`drover queue suspend NAME[@NODE]`: the instances not suspended yet."""
    queue = queue_named(state, sections, name)
    may_manage(queue, user, is_admin, "suspend")
    check_reason(reason)
    nodes = [n for n in _instances(state, queue, node) if name not in state.nodes[n].suspended_queues]
    if not nodes:
        raise Conflict(f"queue instance {_label(name, node)} is already suspended" if node else
                       f"queue {name} is suspended already on every node it has")
    if not is_admin:
        _only_own_jobs(state, name, set(nodes), user, "suspending")
    by = f"{reason} ({user})" if reason else f"by {user}"
    outcome = Outcome(reschedule=True)
    for n in nodes:
        state.nodes[n].suspended_queues[name] = by
        outcome.changes.node(state.nodes[n])
        outcome.changes.event(now, "queue_suspended", node=n, queue=name, by=user, reason=reason or None)
    for job, task in _tasks_there(state, name, set(nodes)):
        if checkpoints.migrates_on_suspend(job) and task.state is JobState.RUNNING:
            migrate_task(state, outcome, task, now)
        elif SuspendReason.QUEUE not in task.suspended_by:
            change_reasons(state, outcome, task, suspension.suspend(task_reasons(task), SuspendReason.QUEUE))
    return outcome


def unsuspend(state: ControllerState, sections: Mapping[str, QueueSection], name: str, node: str | None,
              user: str, is_admin: bool, now: float) -> Outcome:
    """`drover queue unsuspend NAME[@NODE]`: its suspended instances; the jobs they froze are
    thawed, but for those also suspended on their own."""
    queue = queue_named(state, sections, name)
    may_manage(queue, user, is_admin, "unsuspend")
    nodes = [n for n in _instances(state, queue, node, every=True) if name in state.nodes[n].suspended_queues]
    if not nodes:
        raise Conflict(f"queue instance {_label(name, node)} is not suspended" if node else
                       f"queue {name} is suspended on no node")
    if not is_admin:
        _only_own_jobs(state, name, set(nodes), user, "resuming")
    outcome = Outcome(reschedule=True)
    for n in nodes:
        del state.nodes[n].suspended_queues[name]
        outcome.changes.node(state.nodes[n])
        outcome.changes.event(now, "queue_unsuspended", node=n, queue=name, by=user)
    for _, task in _tasks_there(state, name, set(nodes)):
        if SuspendReason.QUEUE in task.suspended_by:
            change_reasons(state, outcome, task, suspension.resume(task.suspended_by, SuspendReason.QUEUE))
    return outcome


def _only_own_jobs(state: ControllerState, queue: str, nodes: set[str], user: str, verb: str) -> None:
    """A queue's owner acts on the queue, and on their own jobs: freezing or thawing another
    user's running job is an operator's (as `drover suspend` of another's job is)."""
    others = sorted({job.id for job, _ in _tasks_there(state, queue, nodes) if job.owner != user})
    if others:
        shown = ", ".join(map(str, others[:10])) + ("..." if len(others) > 10 else "")
        raise Forbidden(f"queue {queue} runs jobs of other users there ({shown}): {verb} them needs an operator "
                        f"(as the queue's owner, stop or drain it: no job of it starts then)")


def _instances(state: ControllerState, queue: Queue, node: str | None, every: bool = False) -> list[str]:
    """The nodes named: `node`, which must be one of the queue's; or every node the queue may use
    now (`every`: every node, for an unsuspend after the queue's nodes changed)."""
    allowed = queue.node_names(state.nodes)
    if node is None:
        return sorted(name for name in state.nodes if every or allowed is None or name in allowed)
    if node not in state.nodes:
        raise NotFound(f"node {node!r} does not exist (`drover node list` shows them)")
    if allowed is not None and node not in allowed and not every:
        raise BadRequest(f"queue {queue.name} has no instance on node {node} (its nodes: {', '.join(queue.nodes or ())})")
    return [node]


def _tasks_there(state: ControllerState, queue: str, nodes: set[str]) -> Iterator[tuple[Job, Task]]:
    """The queue's tasks whose attempts live on `nodes` (a parallel job's, by its master's node),
    but those being stopped already (cancelled, requeued, held)."""
    for job, attempt in state.held():
        task = job.tasks.get(attempt.index)
        if (job.spec.queue != queue or attempt.node not in nodes or task is None
                or task.attempt != attempt.number or task.state not in _LIVE):
            continue
        if not task.stop_requested:
            yield job, task


def _label(queue: str, node: str | None) -> str:
    return f"{queue}@{node}" if node else queue
