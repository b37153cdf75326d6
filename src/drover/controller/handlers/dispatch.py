"""Run the planner over the working set and turn its starts into attempts and node orders."""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from drover.config_schema import QueueSection
from drover.controller.effects import Outcome
from drover.controller.lifecycle import change_task
from drover.controller.state import ControllerState
from drover.core.job import Attempt, Job, Task
from drover.core.job_state import JobState, Trigger
from drover.core.patterns import expand
from drover.protocol.node_channel import File, StartAttempt
from drover.records import AttemptOrder
from drover.scheduler.plan import plan
from drover.scheduler.snapshot import NodeView, PendingIndices, PendingWork
from drover.store.base import Store


@dataclass(frozen=True, slots=True)
class OrderOptions:
    """The cluster's settings that travel in every start order."""

    kill_grace_s: float = 10.0  # between the warning signal and SIGKILL
    queues: Mapping[str, QueueSection] = field(default_factory=dict)  # name → its prolog/epilog


NO_QUEUE_METHODS = QueueSection()  # "default" and any queue drover.toml does not name


def schedule(state: ControllerState, now: float, store: Store, orders: OrderOptions) -> Outcome:
    outcome = Outcome()
    nodes = [
        NodeView(node.name, node.state, node.total, node.free, node.free_cpu_ids())
        for node in state.nodes.values()
    ]
    if state.pending_reasons and not any(view.state.accepts_work and view.free.cpus for view in nodes):
        return outcome  # nothing can start; the reasons from the last cycle still hold
    work = [item for job in state.jobs.values() if (item := _pending_work(state, job, store))]
    if not work:
        state.pending_reasons = {}
        return outcome
    decided = plan(work, nodes, now)
    state.pending_reasons = dict(decided.pending_reasons)
    for start in decided.starts:
        job = state.jobs[start.job]
        task = job.tasks.get(start.index)
        if task is None:
            job.take_fresh(start.index)
            task = job.tasks[start.index] = Task(job.id, start.index, JobState.PENDING, now)
            outcome.changes.job(job)
        state.attempts.pop((job.id, task.index, task.attempt), None)
        change_task(outcome, task, Trigger.DISPATCH, now, node=start.node, cpu_ids=list(start.cpu_ids))
        attempt = Attempt(job.id, task.index, task.attempt, start.node, start.cpu_ids, now)
        state.attempts[job.id, task.index, task.attempt] = attempt
        state.nodes[start.node].take(start.cpu_ids, job.resources.memory_mib)
        outcome.changes.attempt(attempt)
        outcome.send(start.node, start_order(job, attempt, orders))
    return outcome


def _pending_work(state: ControllerState, job: Job, store: Store) -> PendingWork | None:
    requeued = tuple(sorted(index for index, task in job.tasks.items() if task.state is JobState.PENDING))
    fresh_held = job.fresh_state is not JobState.PENDING
    if not requeued and (fresh_held or not job.fresh_count):
        return None
    met, failed = True, False
    for dependency in job.after_ok:
        ended = state.ended_state(dependency, store)
        if ended is None:
            met = False
        elif ended != JobState.COMPLETED.value:
            failed = True
    return PendingWork(
        job=job.id, owner=job.owner, priority=job.priority, submitted_at=job.submitted_at,
        resources=job.resources,
        pending=PendingIndices(requeued, job.indices, job.fresh_from, fresh_held, frozenset(job.fresh_skip)),
        running_count=sum(1 for task in job.tasks.values() if task.state.is_active),
        max_running=job.max_running, dependencies_met=met, dependencies_failed=failed,
    )


def output_path(job: Job, index: int, pattern: str, node: str = "%N") -> str:
    """Absolute in the job's working directory; relative when the job runs in a scratch
    directory of its own on the node (the execd resolves it there)."""
    path = expand(pattern, job_id=job.id, index=index, name=job.name, user=job.owner, node=node)
    return os.path.join(job.spec["workdir"], path)


def start_order(job: Job, attempt: Attempt, orders: OrderOptions) -> StartAttempt:
    """The order that tells a node to run an attempt: everything its shepherd needs."""
    spec = job.spec
    queue = orders.queues.get(spec.get("queue", "default"), NO_QUEUE_METHODS)
    ranges = job.indices.sorted_ranges()
    config: AttemptOrder = {
        "attempt": attempt.name,
        "job_id": job.id,
        "task_index": attempt.index,
        "attempt_number": attempt.number,
        "is_array": job.is_array,
        "array_first": ranges[0][0] if job.is_array else None,
        "array_last": max(last for _, last, _ in ranges) if job.is_array else None,
        "array_step": ranges[0][2] if job.is_array else None,
        "array_count": job.indices.count if job.is_array else None,
        "name": job.name,
        "owner": job.owner,
        "node": attempt.node,
        "workdir": spec["workdir"],
        "submit_dir": spec["submit_dir"],
        "stdout": output_path(job, attempt.index, spec["output"], attempt.node),
        "stderr": output_path(job, attempt.index, spec["error"], attempt.node) if spec["error"] else None,
        "open_mode": spec["open_mode"],
        "environment": spec["environment"],
        "cpus": job.resources.cpus,
        "cpu_ids": list(attempt.cpu_ids),
        "memory_mib": job.resources.memory_mib,
        "time_limit_s": spec["time_limit_s"],
        "kill_grace_s": orders.kill_grace_s,
        "priority": job.priority,
        "mail_user": spec.get("mail_user"),
        "mail_type": spec.get("mail_type", []),
        "keep_spool": spec.get("keep_spool", False),
        "stage_out": spec.get("stage_out", []),
        "job_prolog": spec.get("prolog"),
        "job_epilog": spec.get("epilog"),
        "epilog_sets_exit": spec.get("epilog_sets_exit", False),
        "warn_signal": spec.get("warn_signal"),
        "warn_before_s": spec.get("warn_before_s", 60),
        "checkpoint_signal": spec.get("checkpoint_signal"),  # the shepherd forwards it to the job
        "rerunnable": spec.get("rerunnable", True),  # read by the node's cleanup (mail, final record)
        "pty": spec.get("pty", False),
        "queue": spec.get("queue", "default"),
        "queue_prolog": queue.prolog,
        "queue_epilog": queue.epilog,
    }
    stage_in = [File(f["name"], base64.b64decode(f["data"]), f["mode"]) for f in spec.get("stage_in", [])]
    return StartAttempt(attempt.name, config, spec["script"], stage_in)
