"""Build the API's read models from the working set and the store. Read-only."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from drover.controller.decoders import READS
from drover.controller.handlers.dispatch import output_path
from drover.controller.reads import promised_view
from drover.controller.state import ControllerState
from drover.core.gres import Device, GresNeed, describe
from drover.core.job import Attempt, Job, Task
from drover.core.job_spec import shown_options
from drover.core.job_state import JobState
from drover.core.views import job_state
from drover.protocol.api import (
    AttemptInfo,
    DependencyOn,
    JobInfo,
    NodeInfo,
    PeTaskInfo,
    TaskInfo,
    Usage,
)
from drover.records import PeTaskRecord
from drover.scheduler.reasons import Waiting
from drover.store.base import EndedJobRecord, Store


def job_info(state: ControllerState, job: Job, with_tasks: bool = False, store: Store | None = None) -> JobInfo:
    promised = promised_view.promised_attempts(state, job)
    counts = promised_view.shown_counts(job.task_counts(), len(promised))
    info = job_summary(job, counts, job_exit_status(job), promised_view.shown_reason(state, job, promised))
    if with_tasks:
        # Without the store (it is away), the working set's attempts alone: those of the tasks now.
        attempts = store.attempts_of(job.id) if store is not None else []
        latest = [attempt for attempt in state.attempts.values() if attempt.job_id == job.id]
        with_tasks_of(info, job, attempts + latest)  # the working set's, possibly not committed, last
    return info


def stored_job_info(job: Job, attempts: list[Attempt]) -> JobInfo:
    """A job as the store has it (one that ended: nothing of it is in the working set), with
    its tasks and every attempt. Touches no working set: it may be built on any thread."""
    info = job_summary(job, job.task_counts(), job_exit_status(job))  # ended: nothing of it is promised
    with_tasks_of(info, job, attempts)
    return info


def with_tasks_of(info: JobInfo, job: Job, attempts: list[Attempt]) -> None:
    """Fill `info.tasks`; of two records of one attempt, the later in `attempts` is shown."""
    by_task: dict[int, dict[int, Attempt]] = {}
    for attempt in attempts:
        by_task.setdefault(attempt.index, {})[attempt.number] = attempt
    info.tasks = [task_info(job, task, list(by_task.get(task.index, {}).values())) for task in sorted_tasks(job)]
    if not job.is_array and not job.tasks:
        # A job that never started has no task record yet; show its one task all the same.
        info.tasks = [task_info(job, Task(job.id, 0, job.fresh_state, job.submitted_at), [])]


def job_summary(job: Job, counts: dict[str, int], exit_status: int | None,
                reason: Waiting | None = None) -> JobInfo:
    """What a listing shows of a job (no tasks): `counts` are its task counts (Job.task_counts)."""
    return JobInfo(
        id=job.id, name=job.name, owner=job.owner,
        state=job.state.value if job.state else job_state(counts), queue=job.spec.queue,
        submitted_at=job.submitted_at, ended_at=job.ended_at, priority=job.priority,
        cpus=job.resources.cpus, memory_mib=job.resources.memory_mib,
        time_limit_s=job.spec.time_limit_s,
        array=job.indices.describe() if job.is_array else None, max_running=job.max_running,
        task_counts=counts,
        pending_reason=reason.value if reason else None,
        pending_explanation=reason.explanation if reason else None,
        exit_status=exit_status, end_reason=job.end_reason, workdir=job.spec.workdir, submit_dir=job.spec.submit_dir,
        output=job.spec.output,
        error=job.spec.error,
        after_ok=[d.job for d in job.dependencies.on if d.kind == "afterok" and d.task is None and not d.per_task],
        dependencies=[DependencyOn(kind=d.kind, job=d.job, task=d.task, per_task=d.per_task)
                      for d in job.dependencies.on],
        dependency_any=job.dependencies.any, begin_at=job.begin_at,
        gres=list(job.spec.gres), licenses=dict(job.spec.licenses),
        constraint=job.spec.constraint, exclusive=job.spec.exclusive,
        pe=job.spec.pe, pe_per_node=job.spec.pe_per_node,
        notify=job.spec.notify,
        checkpoint=(f"{job.spec.checkpoint} ({job.spec.checkpoint_when or '-'})"
                    if job.spec.checkpoint else None),
        options=shown_options(job.spec),
    )


def ended_job_summary(record: EndedJobRecord) -> JobInfo:
    """An ended job as a listing shows it, from the store's aggregates over its tasks."""
    job = record.job
    counts = dict(record.task_counts)
    if job.fresh_count:
        counts[job.fresh_state.value] = counts.get(job.fresh_state.value, 0) + job.fresh_count
    return job_summary(job, counts, ended_exit_status(job, record.first_unfinished))


def sorted_tasks(job: Job) -> list[Task]:
    return [job.tasks[index] for index in sorted(job.tasks)]


def task_info(job: Job, task: Task, attempts: list[Attempt]) -> TaskInfo:
    """A task with its attempts; a promised one (its latest attempt waits to follow another)
    shows as pending (promised_view.py)."""
    latest = next((attempt for attempt in attempts if attempt.number == task.attempt), None)
    return TaskInfo(
        index=task.index, state=promised_view.shown_task_state(task, latest), state_since=task.state_since,
        cancel_requested=task.cancel_requested, exit_status=task.exit_status, suspended_by=sorted(task.suspended_by),
        stdout=output_path(job, task.index, job.spec.output),
        stderr=output_path(job, task.index, job.spec.error) if job.spec.error else None,
        attempts=[attempt_info(a) for a in sorted(attempts, key=lambda a: a.number)],
    )


def attempt_info(attempt: Attempt) -> AttemptInfo:
    record = attempt.exit
    return AttemptInfo(
        number=attempt.number, node=attempt.node, cpu_ids=list(attempt.cpu_ids),
        dispatched_at=attempt.dispatched_at, started_at=attempt.started_at, ended_at=attempt.ended_at,
        exit_code=record["exit_code"] if record else None, signal=record["signal"] if record else None,
        failure=record["failure"] if record else None, timed_out=bool(record and record["timed_out"]),
        terminated=bool(record and record["terminated"]), out_of_memory=bool(record and record["out_of_memory"]),
        pids_refused=record.get("pids_refused", 0) if record else 0, pids_max=record.get("pids_max") if record else None,
        usage=usage_of(attempt), cleanup=attempt.cleanup,
        pty_socket=attempt.pty_socket if attempt.ended_at is None else None,
        gres={name: list(indices) for name, indices in attempt.gres.items()},
        other_nodes={node: list(cpu_ids) for node, cpu_ids in attempt.others},
        pe_tasks=[pe_task_info(attempt, record) for record in attempt.pe_tasks],
        notes=list(record.get("notes", [])) if record else [],
        after=attempt.after if attempt.started_at is None and attempt.ended_at is None else None,
    )


def pe_task_info(attempt: Attempt, record: PeTaskRecord) -> PeTaskInfo:
    """A task the attempt started on one of its hosts (qrsh -inherit), as the API shows it."""
    status = record["exit"]
    shown = None
    if status is not None:
        shown = (status["exit_code"] if status["exit_code"] is not None
                 else 128 + status["signal"] if status["signal"] is not None else 1)
    return PeTaskInfo(job_id=attempt.job_id, task=attempt.index, attempt=attempt.number, petask=record["petask"],
                      host=record["host"], argv=record["argv"], started_at=record["started_at"],
                      ended_at=record["ended_at"], exit_code=status["exit_code"] if status else None,
                      signal=status["signal"] if status else None, failure=status["failure"] if status else None,
                      exit_status=shown, usage=READS.convert(record["usage"], Usage) if record["usage"] else None,
                      in_job_usage=record["summed"])


def usage_of(attempt: Attempt) -> Usage | None:
    """The usage record as the API shows it (fields a newer shepherd adds are passed over)."""
    return READS.convert(attempt.usage, Usage) if attempt.usage else None


def job_exit_status(job: Job) -> int | None:
    """0 once every task completed; the first failed task's status once any failed; None before."""
    if job.ended_at is None:
        return None
    first = next((task for task in sorted_tasks(job) if task.state is not JobState.COMPLETED), None)
    return ended_exit_status(job, first)


def ended_exit_status(job: Job, first_unfinished: Task | None) -> int:
    """`first_unfinished`: the task record with the lowest index that did not complete."""
    if first_unfinished is not None:
        if first_unfinished.exit_status not in (None, 0):
            return first_unfinished.exit_status
        return 1
    if job.fresh_count and job.fresh_state is not JobState.COMPLETED:
        return 1
    return 0


def node_info(state: ControllerState) -> list[NodeInfo]:
    return [
        NodeInfo(
            name=node.name, state=node.state.value, cpus=node.cpus, memory_mib=node.memory_mib,
            cpus_used=len(node.used_cpu_ids), memory_mib_used=node.used_memory_mib,
            running=node.running, last_seen=node.last_seen, reason=node.reason, load=node.load,
            memory_free_mib=node.memory_free_mib, gres=devices_counted(node.devices),
            gres_used=devices_held(node.used_devices), features=sorted(node.features),
            queue_errors=dict(sorted(node.queue_errors.items())),
            suspended_queues=dict(sorted(node.suspended_queues.items())),
            ends_at=node.ends_at,
        )
        for node in sorted(state.nodes.values(), key=lambda node: node.name)
    ]


def devices_counted(devices: Iterable[Device]) -> str:
    """"gpu:a100:2,nic:1": a node's devices, as Slurm's Gres= shows them."""
    counts = Counter((device.name, device.type) for device in devices)
    return describe(GresNeed(name, kind or None, count) for (name, kind), count in counts.items())


def devices_held(devices: Iterable[Device]) -> str:
    """"gpu:a100:1(IDX:0)": the devices in use, with their indices, as Slurm's GresUsed= shows them."""
    by_kind: dict[tuple[str, str], list[int]] = {}
    for device in devices:
        by_kind.setdefault((device.name, device.type), []).append(device.index)
    return ",".join(f"{name}:{kind + ':' if kind else ''}{len(indices)}(IDX:{_ranges(sorted(indices))})"
                    for (name, kind), indices in sorted(by_kind.items()))


def _ranges(indices: list[int]) -> str:
    parts: list[str] = []
    for index in indices:
        if parts and parts[-1].split("-")[-1] == str(index - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{index}"
        else:
            parts.append(str(index))
    return ",".join(parts)
