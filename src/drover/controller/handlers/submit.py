"""Accept new jobs: validate everything first, so a bad request changes nothing."""

from __future__ import annotations

import base64
import math
import os
import pwd
import re
from collections.abc import Callable, Mapping
from typing import Any

from drover.config_schema import ParallelEnvironmentSection
from drover.controller.effects import Outcome
from drover.controller.handlers import checkpoints, parallel_envs, resource_requests
from drover.controller.state import ControllerState
from drover.core.arrays import TaskIndices
from drover.core.checkpoints import Environment as CheckpointEnvironment
from drover.core.dependencies import KINDS, Dependencies, Dependency
from drover.core.errors import BadRequest, NotFound
from drover.core.job import Job, JobPayload, JobSpec, payload_bytes
from drover.core.job_state import JobState
from drover.core.limits import (
    MAX_CPUS,
    MAX_ID,
    MAX_MEMORY_MIB,
    MAX_PIDS,
    MAX_TIME_LIMIT_S,
    MIB,
    PRIORITY_RANGE,
    Limits,
    bounded,
    refuse,
)
from drover.core.patterns import check_pattern, default_output
from drover.core.queues import DEFAULT, Queue, QueueRecord
from drover.core.resources import Resources
from drover.core.signals import job_signal
from drover.core.units import format_duration, parse_array
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
    validated = [_validated_job(state, spec, owner, now, store, n, queues, limits, licenses or {},
                                environments or {}, parallel_environments, checkpoints or {})
                 for n, spec in enumerate(submissions)]
    jobs = [job for job, _ in validated]
    _check_pending_per_user(state, owner, jobs, limits)
    _check_bytes_per_user(state, owner, jobs, limits)
    ids: list[int] = []
    for job, payload in validated:
        if job.spec["event_log"]:
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


def queue_time_limit(asked: int | None, queue: Queue, bad: Callable[[str], BadRequest]) -> int | None:
    """The job's time limit under its queue's (Slurm's partition DefaultTime and MaxTime): a job
    that names none gets the queue's default (or its maximum); one over the maximum is refused
    at once rather than left waiting for ever."""
    default, maximum = queue.default_time_s, queue.max_time_s
    if asked is None:
        return default if default is not None else maximum
    if maximum is not None and asked > maximum:
        raise bad(f"--time {format_duration(asked)} is over queue {queue.name}'s limit of {format_duration(maximum)} "
                  "(its max_time_s)")
    return asked


def check_queue_takes(queue: Queue, memory_mib: int, bad: Callable[[str], BadRequest]) -> None:
    """A draining queue takes no new job; one over the queue's max_memory is refused at once."""
    if not queue.record.accepting:
        reason = f" ({queue.record.reason})" if queue.record.reason else ""
        raise bad(f"queue {queue.name} is {queue.state.value}{reason}: it takes no new jobs")
    if queue.max_memory_mib is not None and memory_mib > queue.max_memory_mib:
        raise bad(f"--mem {memory_mib}M is over queue {queue.name}'s limit of {queue.max_memory_mib}M "
                  "(its max_memory_mib)")


def _validated_job(
    state: ControllerState, spec: JobSubmission, owner: str, now: float, store: Store, position: int,
    queues: Mapping[str, Queue], limits: Limits, licenses: Mapping[str, int] | None = None,
    environments: Mapping[str, object] | None = None,
    parallel_environments: Mapping[str, ParallelEnvironmentSection] | None = None,
    checkpoint_environments: Mapping[str, CheckpointEnvironment] | None = None,
) -> tuple[Job, JobPayload]:
    """The job, and its payload (script, environment, staged files), which only the store keeps."""
    where = f"job {position + 1} of the request: " if position else ""

    def bad(message: str) -> BadRequest:
        return BadRequest(where + message)

    def over(what: str, limit: int, key: str, unit: str = "") -> BadRequest:
        return BadRequest(where + str(refuse(what, limit, key, unit)))

    if not spec.script.strip():
        raise bad("the job script is empty")
    queue = queues.get(spec.queue)
    if queue is None:
        raise bad(f"unknown queue {spec.queue!r}; this cluster has {', '.join(sorted(queues))}")
    check_queue_takes(queue, spec.memory_mib, bad)
    if len(spec.script.encode()) > limits.max_script_bytes:
        raise over("the job script", limits.max_script_bytes, "max_script_bytes", "bytes")
    if "\0" in spec.script:  # a shell stops reading at it (Slurm's controller refuses it too)
        raise bad("the job script holds a NUL byte ('\\0'), which no shell script can")
    for option, path in (("the working directory", spec.workdir), ("the submit directory", spec.submit_dir),
                         ("--output", spec.output), ("--error", spec.error), ("--event-log", spec.event_log),
                         *(("a staged file's name", name) for name in [f.name for f in spec.stage_in] + spec.stage_out)):
        if path and "\0" in path:
            raise bad(f"{option} must not hold a NUL byte")
        if path and len(path.encode()) > limits.max_path_bytes:
            raise over(f"{option} ({len(path.encode())} bytes)", limits.max_path_bytes, "max_path_bytes", "bytes")
    if spec.workdir and not os.path.isabs(spec.workdir):
        raise bad(f"the working directory must be an absolute path, not {spec.workdir!r}")
    if spec.submit_dir and not os.path.isabs(spec.submit_dir):
        raise bad(f"the submit directory must be an absolute path, not {spec.submit_dir!r}")
    for option, command in (("--prolog", spec.prolog), ("--epilog", spec.epilog)):
        if command is not None and "\0" in command:  # it runs as a command line, which cannot hold one
            raise bad(f"{option} must not hold a NUL byte")
    for staged in spec.stage_in:
        if not 0 <= staged.mode <= 0o7777:
            raise bad(f"a staged file's mode must be between 0 and 0o7777, not {staged.mode}")
    if not spec.workdir and not spec.submit_dir:
        raise bad("a job that runs in a scratch directory (no working directory) needs its submit directory")
    staged_bytes = sum(len(file.data) for file in spec.stage_in)
    if staged_bytes > limits.max_stage_in_bytes:
        raise over(f"the stage-in files ({staged_bytes / 2**20:.1f} MiB)", limits.max_stage_in_bytes,
                   "max_stage_in_bytes", "bytes")
    for name in [file.name for file in spec.stage_in] + spec.stage_out:
        if not is_relative_inside(name):
            raise bad(f"stage-in and stage-out names must be relative paths inside the working directory, not {name!r}")
    if any(char in spec.name for char in "\n\r\0") or not spec.name.strip():
        raise bad("the job name must be one non-empty line")
    if len(spec.name.encode()) > limits.max_name_bytes:
        raise over("the job name", limits.max_name_bytes, "max_name_bytes", "bytes")
    if len(spec.environment) > limits.max_env_vars:
        raise over(f"the environment ({len(spec.environment)} variables)", limits.max_env_vars, "max_env_vars",
                   "variables")
    env_bytes = sum(len(k.encode()) + len(v.encode()) + 2 for k, v in spec.environment.items())
    if env_bytes > limits.max_env_bytes:
        raise over(f"the environment ({env_bytes} bytes)", limits.max_env_bytes, "max_env_bytes", "bytes")
    if any("\0" in k or "=" in k or not k or "\0" in v for k, v in spec.environment.items()):
        raise bad("environment names must be non-empty, without '=' or NUL bytes; values without NUL bytes")
    if spec.cpus < 1:
        raise bad(f"--cpus must be 1 or more, not {spec.cpus}")
    bounded(spec.cpus, 1, MAX_CPUS, where + "--cpus")
    bounded(spec.memory_mib, 0, MAX_MEMORY_MIB, where + "--mem (MiB)")
    if spec.time_limit_s is not None:
        bounded(spec.time_limit_s, 1, MAX_TIME_LIMIT_S, where + "--time (seconds)")
    time_limit_s = queue_time_limit(spec.time_limit_s, queue, bad)
    bounded(spec.warn_before_s, 0, MAX_TIME_LIMIT_S, where + "--signal's warning time (seconds)")
    if spec.pids_max is not None:
        bounded(spec.pids_max, 1, MAX_PIDS, where + "--pids-max")
    if spec.priority not in PRIORITY_RANGE:
        raise bad(f"--priority must be between {PRIORITY_RANGE.start} and {PRIORITY_RANGE.stop - 1}")
    if spec.mail_user is not None:
        check_mail_user(spec.mail_user, where)
    dependencies = _dependencies(spec, where)
    if spec.begin_at is not None and not math.isfinite(spec.begin_at):
        raise bad("--begin must be a finite time")
    if spec.open_mode not in ("truncate", "append"):
        raise bad(f"the open mode must be 'truncate' or 'append', not {spec.open_mode!r}")
    if spec.done_output is not None and spec.error is not None:
        raise bad("--done-output holds stdout and stderr together: leave out --error")
    if spec.zap and spec.done_output is not None:
        raise bad("--zap removes the job's output, --done-output keeps it: give one of them")
    if spec.zap and spec.keep_spool:
        raise bad("--zap removes what the job leaves on its node, --keep-spool keeps it: give one of them")
    if spec.mail_output and not spec.mail_user:
        raise bad("--mail-output needs --mail-user (where to send the output)")
    for pattern in (spec.output, spec.error, spec.done_output):
        if pattern is not None:
            if not pattern:
                raise bad("an output file name must not be empty")
            check_pattern(pattern)
    from drover.mail import MAIL_TYPES

    unknown = [kind for kind in spec.mail_type if kind not in MAIL_TYPES]
    if unknown:
        raise bad(f"unknown mail type {', '.join(unknown)}; known: {', '.join(MAIL_TYPES)}")
    if spec.mail_type and not spec.mail_user:
        raise bad("--mail-type needs --mail-user (where to send the mail)")
    if spec.event_log is not None and (not os.path.isabs(spec.event_log) or "\0" in spec.event_log):
        raise bad(f"the event log must be an absolute path without NUL bytes, not {spec.event_log!r}")
    warn_signal = job_signal(spec.warn_signal, where + "--signal").name if spec.warn_signal is not None else None
    checkpoint_signal = (job_signal(spec.checkpoint_signal, where + "--checkpoint-signal").name
                         if spec.checkpoint_signal is not None else None)
    if spec.warn_signal is not None and time_limit_s is None:
        raise bad("--signal warns before the time limit: it needs --time")
    if spec.array is not None:
        ranges, max_running = parse_array(spec.array, limits.max_array_size)
        indices, is_array = TaskIndices(ranges), True
    else:
        indices, is_array, max_running = TaskIndices(), False, None
    pe = parallel_envs.checked(spec, parallel_environments or {}, owner,
                               [node.cpus for node in state.nodes.values()], where)
    resources = Resources(pe[1] if pe else spec.cpus, spec.memory_mib)
    if pe is not None and parallel_envs.spans_nodes(spec, parallel_environments or {}):
        # Its slots may go on several nodes: one slot, with its share of the memory, must fit one.
        _check_fits_somewhere(state, Resources(1, -(-spec.memory_mib // pe[1])), bad)
    else:
        _check_fits_somewhere(state, resources, bad)
    requests = resource_requests.checked(spec, licenses or {}, state.nodes.values(), where)
    for dependency in dependencies.on:
        if dependency.kind != "singleton" and dependency.job not in state.jobs and (
                state.ended_state(dependency.job, store) is None):
            raise NotFound(where + f"--dependency names job {dependency.job}, which does not exist")
    payload: JobPayload = {
        "script": spec.script,
        "environment": spec.environment,
        "stage_in": [{"name": f.name, "data": base64.b64encode(f.data).decode(), "mode": f.mode} for f in spec.stage_in],
    }
    job_spec: JobSpec = {
        "workdir": spec.workdir,
        "submit_dir": spec.submit_dir or spec.workdir,
        "output": spec.output or default_output(is_array),
        "error": spec.error,
        "open_mode": spec.open_mode,
        "time_limit_s": time_limit_s,
        "mail_user": spec.mail_user,
        "mail_type": spec.mail_type,
        "keep_spool": spec.keep_spool,
        "event_log": spec.event_log,
        "stage_out": spec.stage_out,
        "prolog": spec.prolog,
        "epilog": spec.epilog,
        "epilog_sets_exit": spec.epilog_sets_exit,
        "warn_signal": warn_signal,
        "warn_before_s": spec.warn_before_s,
        "checkpoint_signal": checkpoint_signal,
        "rerunnable": spec.rerunnable,
        "pty": spec.pty,
        "queue": spec.queue,
        "credential": spec.credential,
        "kill_on_invalid_dep": spec.kill_on_invalid_dep,
        "gres": [str(need) for need in requests.gres],
        "licenses": dict(requests.licenses),
        "constraint": requests.constraint.text if requests.constraint is not None else None,
        "exclusive": requests.exclusive,
    }
    if spec.zap:
        job_spec["zap"] = True
    if spec.done_output is not None:
        job_spec["done_output"] = spec.done_output
    if spec.mail_output:
        job_spec["mail_output"] = True
    if spec.environments:
        job_spec["environments"] = known_environments(spec.environments, environments or {}, bad)
    if pe is not None:
        job_spec["pe"], job_spec["pe_slots"] = pe
        if spec.pe_per_node is not None:
            job_spec["pe_per_node"] = spec.pe_per_node
    if spec.pids_max is not None:
        job_spec["pids_max"] = spec.pids_max
    if spec.notify:
        job_spec["notify"] = True
    job_spec.update(checkpoints.checked(spec, checkpoint_environments or {}, bad))  # type: ignore[typeddict-item]
    if "r" in (job_spec.get("checkpoint_when") or ""):
        job_spec["rerunnable"] = True  # checkpoint(5) 'r': requeued when its node is lost
    return Job(
        id=0, owner=owner, name=spec.name, submitted_at=now, priority=spec.priority,
        resources=resources, indices=indices, is_array=is_array, max_running=max_running,
        dependencies=dependencies, spec=job_spec, begin_at=spec.begin_at,
        fresh_state=JobState.HELD if spec.hold else JobState.PENDING, payload_bytes=payload_bytes(payload),
    ), payload


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


def _check_fits_somewhere(state: ControllerState, need: Resources, bad: Any) -> None:
    """Refuse what no registered node could ever run; with no node registered yet, accept."""
    if not state.nodes or any(need.fits_in(node.total) for node in state.nodes.values()):
        return
    largest_cpus = max(node.cpus for node in state.nodes.values())
    largest_memory = max(node.memory_mib for node in state.nodes.values())
    raise bad(
        f"no node can run a task of {need.describe()} "
        f"(the largest have {largest_cpus} CPUs and {largest_memory} MiB)"
    )


WAITING = frozenset({JobState.PENDING, JobState.HELD})  # what counts against the pending limits

# One mailbox: what an SMTP relay takes as one recipient (no lists, no spaces, no display names).
_ADDRESS = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                      r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*")


def check_mail_user(text: str, where: str = "") -> None:
    """--mail-user: one address, or the name of a local user (mailed on this host)."""
    if len(text) <= 254 and _ADDRESS.fullmatch(text):
        return
    if text and text.isascii() and "@" not in text:
        try:
            pwd.getpwnam(text)
            return
        except KeyError:
            pass
    raise BadRequest(f"{where}--mail-user takes one address (user@example.org) or the name of a local user, "
                     f"not {text!r}")


def is_relative_inside(name: str) -> bool:
    """A relative path that stays inside the directory it is relative to."""
    if not name or os.path.isabs(name) or "\0" in name:
        return False
    return ".." not in os.path.normpath(name).split(os.sep)
