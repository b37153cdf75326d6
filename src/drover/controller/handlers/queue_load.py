"""What each queue holds now, counted from the working set; and each queue as the planner and
the API see it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from drover.config_schema import QueueSection
from drover.controller.handlers.queues import queues_in_effect
from drover.controller.state import ControllerState
from drover.core.job_state import JobState
from drover.core.node import Node
from drover.core.queues import Queue
from drover.protocol.api import QueueInfo
from drover.scheduler.snapshot import QueueView


@dataclass(slots=True)
class Load:
    running: int = 0  # its tasks holding a node (dispatched, running, suspended, completing)
    pending: int = 0  # its tasks waiting (held ones included)
    by_user: dict[str, int] = field(default_factory=dict)  # running, per owner


def queue_loads(state: ControllerState, pending: bool = False) -> dict[str, Load]:
    """Each queue's running tasks, from the attempts holding the nodes (a planning pass asks);
    with `pending` (`drover queue list`), its waiting ones too, a walk of every task."""
    loads: dict[str, Load] = {}
    for job, _ in state.held():
        load = loads.setdefault(job.spec.queue, Load())
        load.running += 1
        load.by_user[job.owner] = load.by_user.get(job.owner, 0) + 1
    if pending:
        for job in state.jobs.values():
            load = loads.setdefault(job.spec.queue, Load())
            load.pending += sum(1 for task in job.tasks.values() if task.state in WAITING)
            if job.fresh_state in WAITING:
                load.pending += job.fresh_count
    return loads


WAITING = (JobState.PENDING, JobState.HELD)


def planner_views(state: ControllerState, sections: Mapping[str, QueueSection], now: float) -> dict[str, QueueView]:
    """The queues that can keep a job from starting (stopped, outside their window, on some
    nodes only, with limits), as the planner takes them; an open queue without any is left out."""
    queues = queues_in_effect(state, sections)
    views: dict[str, QueueView] = {}
    errors: dict[str, set[str]] = {}  # queue → the nodes where it is in error
    suspended: dict[str, set[str]] = {}  # queue → the nodes where it is suspended
    for node in state.nodes.values():
        for name in node.queue_errors:
            errors.setdefault(name, set()).add(node.name)
        for name in node.suspended_queues:
            suspended.setdefault(name, set()).add(node.name)
    limited = [queue for queue in queues.values()
               if queue.max_running is not None or queue.max_running_per_user is not None]
    loads = queue_loads(state) if limited else {}
    for queue in queues.values():
        opens_at = _opens_at(queue, now)
        failed = frozenset(errors.get(queue.name, ()))
        stopped_there = frozenset(suspended.get(queue.name, ()))
        if (queue.record.starting and opens_at is None and queue.nodes is None and queue.max_running is None
                and queue.max_running_per_user is None and not failed and not stopped_there):
            continue
        load = loads.get(queue.name, Load())
        nodes = queue.node_names(state.nodes)
        if failed or stopped_there:  # its instances in error or suspended take none of its jobs
            nodes = frozenset(state.nodes if nodes is None else nodes) - failed - stopped_there
        views[queue.name] = QueueView(
            queue.name, starting=queue.record.starting, opens_at=opens_at, in_error=failed,
            suspended=stopped_there,
            nodes=nodes, max_running=queue.max_running,
            max_running_per_user=queue.max_running_per_user, running=load.running, running_by_user=load.by_user)
    return views


def _opens_at(queue: Queue, now: float) -> float | None:
    """When its window opens next, if it is closed now; None when it is open (or has none)."""
    if queue.window is None or queue.window.is_open(now):
        return None
    return queue.window.next_open(now)


def queue_infos(state: ControllerState, sections: Mapping[str, QueueSection], now: float) -> list[QueueInfo]:
    """Every queue, as `drover queue list` and the front ends show it."""
    loads = queue_loads(state, pending=True)
    infos = []
    for queue in queues_in_effect(state, sections).values():
        load = loads.get(queue.name, Load())
        names = queue.node_names(state.nodes)
        nodes = [node for node in state.nodes.values() if names is None or node.name in names]
        up = [node for node in nodes if node.state.accepts_work or node.running]
        opens_at = _opens_at(queue, now)
        infos.append(QueueInfo(
            name=queue.name, state=queue.state.value, reason=queue.record.reason, defined_in=queue.defined_in,
            owner=queue.owner, priority=queue.priority, nice=queue.nice,
            nodes=list(queue.nodes) if queue.nodes is not None else None,
            node_names=sorted(node.name for node in nodes), max_running=queue.max_running,
            max_running_per_user=queue.max_running_per_user, max_memory_mib=queue.max_memory_mib,
            default_time_s=queue.default_time_s, max_time_s=queue.max_time_s,
            window=queue.window.text if queue.window is not None else None, window_open=opens_at is None,
            opens_at=opens_at, mail_finished=queue.mail_finished, pending=load.pending, running=load.running,
            cpus=sum(node.cpus for node in up), cpus_used=sum(len(node.used_cpu_ids) for node in up),
            changed=dict(queue.record.settings),
            errors={node.name: node.queue_errors[queue.name] for node in sorted(state.nodes.values(), key=_name)
                    if queue.name in node.queue_errors},
            suspended={node.name: node.suspended_queues[queue.name]
                       for node in sorted(state.nodes.values(), key=_name) if queue.name in node.suspended_queues},
            suspend_method=queue.suspend_method, resume_method=queue.resume_method,
            terminate_method=queue.terminate_method, notify_s=queue.notify_s,
        ))
    return infos


def _name(node: Node) -> str:
    return node.name
