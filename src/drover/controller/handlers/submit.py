"""Accept new jobs: validate everything first, so a bad request changes nothing."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from drover.config_schema import ParallelEnvironmentSection
from drover.controller.effects import Outcome
from drover.controller.handlers import checkpoints, parallel_envs, resource_requests
from drover.controller.handlers.submission_checks import (
    HELD_ESCAPE,
    Refusals,
    Timing,
    check_outputs_and_mail,
    check_paths,
    check_payload,
    check_some_node_offers,
    checked_numbers_and_time,
)
from drover.controller.state import ControllerState
from drover.core.arrays import TaskIndices
from drover.core.checkpoints import Environment as CheckpointEnvironment
from drover.core.dependencies import KINDS, Dependencies, Dependency
from drover.core.errors import BadRequest, NotFound
from drover.core.job import Job, JobPayload, payload_bytes
from drover.core.job_spec import JobOptions, JobSpec
from drover.core.job_state import JobState
from drover.core.limits import MAX_ID, MIB, Limits, bounded, refuse
from drover.core.patterns import default_output
from drover.core.queues import DEFAULT, Queue, QueueRecord
from drover.core.resources import Resources
from drover.core.units import parse_array
from drover.protocol.api import JobSubmission
from drover.store.base import Store


def submit(
    state: ControllerState, submissions: list[JobSubmission], owner: str, now: float, store: Store,
    queues: Mapping[str, Queue] | None = None, limits: Limits | None = None, event_log_node: str | None = None,
    licenses: Mapping[str, int] | None = None, environments: Mapping[str, object] | None = None,
    parallel_environments: Mapping[str, ParallelEnvironmentSection] | None = None,
    checkpoints: Mapping[str, CheckpointEnvironment] | None = None,
) -> tuple[Outcome, list[int]]:
    """`queues`: the queues in effect (controller/handlers/queues.py; None: "default" alone).
    Every job is checked before any changes: a bad one refuses the whole request, which changes
    nothing. `event_log_node`: the node that writes the event logs of these jobs, if not the
    controller. `licenses`: the cluster's licences ([licenses]), each with its count."""
    limits = limits or Limits()
    if len(submissions) > limits.max_jobs_per_request:
        raise refuse(f"a request of {len(submissions)} jobs", limits.max_jobs_per_request, "max_jobs_per_request",
                     "jobs")
    outcome = Outcome(reschedule=True)
    queues = queues or {DEFAULT: Queue(DEFAULT, QueueRecord(DEFAULT))}
    fitting: dict[Resources, bool] = {}  # the sizes some node could run, each asked once a request
    validated = [_validated_job(state, submission, owner, now, store, n, queues, limits, licenses or {},
                                environments or {}, parallel_environments, checkpoints or {}, fitting)
                 for n, submission in enumerate(submissions)]
    jobs = [job for job, _ in validated]
    _check_pending_per_user(state, owner, jobs, limits)
    _check_bytes_per_user(state, owner, jobs, limits)
    ids: list[int] = []
    for job, payload in validated:
        if job.spec.event_log:
            job.event_log_node = event_log_node
        job.id = state.next_job_id
        state.next_job_id += 1
        state.add_job(job)
        ids.append(job.id)
        outcome.changes.new_jobs.append(job)
        outcome.changes.payloads[job.id] = payload  # to the store alone: the working set keeps its weight
        outcome.changes.event(
            now, "submitted", job.id, name=job.name, tasks=job.indices.count,
            array=job.indices.describe() if job.is_array else None, held=job.fresh_state is JobState.HELD,
        )
    return outcome, ids


def _check_pending_per_user(state: ControllerState, owner: str, new: list[Job], limits: Limits) -> None:
    """One user's waiting jobs and tasks, with the new ones, within the cluster's limits. The
    working set keeps each owner's jobs and tasks (an upper bound of what waits), so the exact
    count, which walks the working set, runs only near a limit."""
    new_tasks = sum(job.indices.count for job in new)
    most_jobs, most_tasks, _ = state.owner_load.get(owner, (0, 0, 0))
    if (most_jobs + len(new) <= limits.max_pending_jobs_per_user
            and most_tasks + new_tasks <= limits.max_pending_tasks_per_user):
        return
    waiting_jobs = waiting_tasks = 0
    for job in state.jobs.values():
        if job.owner != owner:
            continue
        waiting = (job.fresh_count if job.fresh_state in WAITING else 0) + sum(
            1 for task in job.tasks.values() if task.state in WAITING)
        if waiting:
            waiting_jobs, waiting_tasks = waiting_jobs + 1, waiting_tasks + waiting
    jobs = waiting_jobs + len(new)
    if jobs > limits.max_pending_jobs_per_user:
        raise refuse(f"{owner}'s pending jobs ({jobs} with this request)", limits.max_pending_jobs_per_user,
                     "max_pending_jobs_per_user", "jobs")
    tasks = waiting_tasks + new_tasks
    if tasks > limits.max_pending_tasks_per_user:
        raise refuse(f"{owner}'s pending tasks ({tasks} with this request)", limits.max_pending_tasks_per_user,
                     "max_pending_tasks_per_user", "tasks")


def _check_bytes_per_user(state: ControllerState, owner: str, new: list[Job], limits: Limits) -> None:
    """The scripts, environments and staged-in files of one user's unfinished jobs (every one is
    in the working set, which keeps what each weighs), with the new ones', within the limit."""
    held = state.owner_load.get(owner, (0, 0, 0))[2]
    total = held + sum(job.payload_bytes for job in new)
    if total > limits.max_job_bytes_per_user:
        raise refuse(f"the total of the scripts, environments and staged-in files of {owner}'s unfinished jobs "
                     f"({_amount(total)} with this request; {_amount(held)} before it)",
                     limits.max_job_bytes_per_user, "max_job_bytes_per_user", "bytes")


def _amount(count: int) -> str:
    return f"{count} bytes" if count < MIB else f"{count / MIB:.1f} MiB"


def check_queue_takes(queue: Queue, memory_mib: int, bad: Callable[[str], BadRequest]) -> None:
    """A draining queue takes no new job; one over the queue's max_memory is refused at once."""
    if not queue.record.accepting:
        reason = f" ({queue.record.reason})" if queue.record.reason else ""
        raise bad(f"queue {queue.name} is {queue.state.value}{reason}: it takes no new jobs")
    if queue.max_memory_mib is not None and memory_mib > queue.max_memory_mib:
        raise bad(f"--mem {memory_mib}M is over queue {queue.name}'s limit of {queue.max_memory_mib}M "
                  "(its max_memory_mib)")


def _validated_job(
    state: ControllerState, submission: JobSubmission, owner: str, now: float, store: Store, position: int,
    queues: Mapping[str, Queue], limits: Limits, licenses: Mapping[str, int] | None = None,
    environments: Mapping[str, object] | None = None,
    parallel_environments: Mapping[str, ParallelEnvironmentSection] | None = None,
    checkpoint_environments: Mapping[str, CheckpointEnvironment] | None = None,
    fitting: dict[Resources, bool] | None = None,
) -> tuple[Job, JobPayload]:
    """The job, and its payload (script, environment, staged files), which only the store keeps."""
    refusals = Refusals.of(position)
    if not submission.script.strip():
        raise refusals.bad("the job script is empty")
    queue = queues.get(submission.queue)
    if queue is None:
        raise refusals.bad(f"unknown queue {submission.queue!r}; this cluster has {', '.join(sorted(queues))}")
    check_queue_takes(queue, submission.memory_mib, refusals.bad)
    check_payload(submission, limits, refusals)
    check_paths(submission, limits, refusals)
    timing = checked_numbers_and_time(submission, queue, refusals)
    check_outputs_and_mail(submission, refusals)
    dependencies = _dependencies(submission, refusals.where)
    if submission.array is not None:
        ranges, max_running = parse_array(submission.array, limits.max_array_size)
        indices, is_array = TaskIndices(ranges), True
    else:
        indices, is_array, max_running = TaskIndices(), False, None
    resources, pe, requests = _parallel_and_resources(state, submission, owner, parallel_environments or {},
                                                      licenses or {}, refusals, {} if fitting is None else fitting)
    _check_dependencies_exist(state, store, dependencies, refusals.where)
    payload: JobPayload = {
        "script": submission.script,
        "environment": submission.environment,
        "stage_in": [{"name": f.name, "data": base64.b64encode(f.data).decode(), "mode": f.mode} for f in submission.stage_in],
    }
    stored = spec_of(submission, is_array=is_array, timing=timing, requests=requests, pe=pe,
                       environments=known_environments(submission.environments, environments or {}, refusals.bad),
                       checkpointing=checkpoints.checked(submission, checkpoint_environments or {}, refusals.bad))
    return Job(
        id=0, owner=owner, name=submission.name, submitted_at=now, priority=submission.priority,
        resources=resources, indices=indices, is_array=is_array, max_running=max_running,
        dependencies=dependencies, spec=stored, begin_at=submission.begin_at,
        fresh_state=JobState.HELD if submission.hold else JobState.PENDING, payload_bytes=payload_bytes(payload),
    ), payload


def spec_of(submission: JobSubmission, *, is_array: bool, timing: Timing, requests: resource_requests.Requests,
            pe: tuple[str, int] | None, environments: list[str], checkpointing: checkpoints.Checkpointing) -> JobSpec:
    """The stored spec of a checked submission: the one place where the user's form of an option
    becomes the stored one. The options both share are copied as they are (`JobOptions`), then
    what the controller made of the rest: the default output pattern, the submit directory, the
    queue's time limit, the signals' canonical names, the resource requests' canonical spelling
    (Grid Engine's -l read into them), the PE's slots as a number, the named environments, and
    the checkpoint occasions parsed."""
    options = {name: getattr(submission, name) for name in JobOptions.__struct_fields__}
    options.update(
        submit_dir=submission.submit_dir or submission.workdir,
        time_limit_s=timing.time_limit_s,
        warn_signal=timing.warn_signal,
        checkpoint_signal=timing.checkpoint_signal,
        gres=[str(need) for need in requests.gres],
        licenses=dict(requests.licenses),
        constraint=requests.constraint.text if requests.constraint is not None else None,
        exclusive=requests.exclusive,
        environments=environments,
        checkpoint=checkpointing.checkpoint,
        # checkpoint(5)'s 'r': requeued when its node is lost
        rerunnable=submission.rerunnable or "r" in (checkpointing.checkpoint_when or ""),
    )
    return JobSpec(**options, workdir=submission.workdir, output=submission.output or default_output(is_array),
                   pe_slots=pe[1] if pe is not None else None, checkpoint_when=checkpointing.checkpoint_when,
                   checkpoint_interval_s=checkpointing.checkpoint_interval_s)


def _parallel_and_resources(
    state: ControllerState, submission: JobSubmission, owner: str,
    parallel_environments: Mapping[str, ParallelEnvironmentSection], licenses: Mapping[str, int], refusals: Refusals,
    fitting: dict[Resources, bool],
) -> tuple[Resources, tuple[str, int] | None, resource_requests.Requests]:
    """Its CPUs and memory (a parallel job's CPUs are its slots), its parallel environment and
    slots, and its requests beyond them, each checked against what the cluster has: what no
    registered node could ever run is refused. `fitting`: the sizes of this request's jobs
    already found to fit some node (or none)."""
    # The nodes' CPUs are read only for a job that names a parallel environment (a generator):
    # a bulk submission to a thousand nodes does not list them once a job.
    pe = parallel_envs.checked(submission, parallel_environments, owner, (node.cpus for node in state.nodes.values()),
                               refusals.where)
    resources = Resources(pe[1] if pe else submission.cpus, submission.memory_mib)
    # Its slots may go on several nodes: one slot, with its share of the memory, must fit one.
    size = (Resources(1, -(-submission.memory_mib // pe[1]))
            if pe is not None and parallel_envs.spans_nodes(submission, parallel_environments) else resources)
    _check_fits_somewhere(state, size, refusals.bad, submission.hold, fitting)
    requests = resource_requests.checked(submission, licenses, state.nodes.values(), refusals.where)
    check_some_node_offers(size, requests.gres, requests.constraint, state.nodes.values(), submission.hold, refusals)
    return resources, pe, requests


def _check_dependencies_exist(state: ControllerState, store: Store, dependencies: Dependencies, where: str) -> None:
    for dependency in dependencies.on:
        if dependency.kind != "singleton" and dependency.job not in state.jobs and (
                state.ended_state(dependency.job, store) is None):
            raise NotFound(where + f"--dependency names job {dependency.job}, which does not exist")


def known_environments(names: list[str], environments: Mapping[str, object],
                       bad: Callable[[str], BadRequest]) -> list[str]:
    """The named environments a job asks for (the Accelerator's, composed with +), each one the
    cluster defines ([environments.NAME]), each once."""
    for name in names:
        if name not in environments:
            have = f"this cluster has {', '.join(sorted(environments))}" if environments else "this cluster defines none"
            raise bad(f"unknown environment {name!r} (--environment); {have}")
    if len(set(names)) != len(names):
        raise bad(f"--environment names an environment twice: {'+'.join(names)}")
    return list(names)


def _dependencies(spec: JobSubmission, where: str) -> Dependencies:
    """The request's dependencies, checked; `after_ok` (older clients) are afterok records."""
    found = [Dependency("afterok", job) for job in spec.after_ok]
    for given in spec.dependencies:
        if given.kind not in KINDS:
            raise BadRequest(f"{where}unknown dependency kind {given.kind!r}; known: {', '.join(KINDS)}")
        if given.kind == "singleton":
            found.append(Dependency("singleton"))
            continue
        if given.task is not None:
            bounded(given.task, 0, MAX_ID, where + "a --dependency task index")
        found.append(Dependency(given.kind, given.job, given.task, given.per_task))
    for dependency in found:
        if dependency.kind != "singleton":
            bounded(dependency.job, 1, MAX_ID, where + "a --dependency job id")
    if len(found) > MAX_DEPENDENCIES:
        raise BadRequest(f"{where}at most {MAX_DEPENDENCIES} dependencies a job, not {len(found)}")
    return Dependencies(tuple(found), spec.dependency_any)


MAX_DEPENDENCIES = 1000  # each is evaluated on every planner pass while the job waits


def _check_fits_somewhere(state: ControllerState, need: Resources, bad: Any, held: bool,
                          fitting: dict[Resources, bool]) -> None:
    """Refuse what no registered node could ever run; with no node registered yet, or held (its
    nodes may come later), accept. Each size is looked for once in `fitting`'s request: a bulk
    submission's jobs are mostly alike, and a cluster may have a thousand nodes."""
    if not state.nodes or held:
        return
    fits = fitting.get(need)
    if fits is None:
        fits = fitting[need] = any(need.fits_in(node.total) for node in state.nodes.values())
    if fits:
        return
    largest_cpus = max(node.cpus for node in state.nodes.values())
    largest_memory = max(node.memory_mib for node in state.nodes.values())
    raise bad(
        f"no node can run a task of {need.describe()} "
        f"(the largest have {largest_cpus} CPUs and {largest_memory} MiB); {HELD_ESCAPE}"
    )


WAITING = frozenset({JobState.PENDING, JobState.HELD})  # what counts against the pending limits
