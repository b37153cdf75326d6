"""Accept new jobs: validate everything first, so a bad request changes nothing."""

from __future__ import annotations

import base64
import os
import signal
from typing import Any

from drover.controller.effects import Outcome
from drover.controller.state import ControllerState
from drover.core.arrays import TaskIndices
from drover.core.errors import BadRequest, NotFound
from drover.core.job import Job
from drover.core.job_state import JobState
from drover.core.patterns import check_pattern, default_output
from drover.core.resources import Resources
from drover.core.units import parse_array
from drover.protocol.api import JobSubmission
from drover.store.base import Store

MAX_SCRIPT_BYTES = 4 * 1024 * 1024
MAX_STAGE_IN_BYTES = 16 * 1024 * 1024  # per job; files travel through the controller
PRIORITY_RANGE = range(-1023, 1024)  # Grid Engine's -p range


def submit(
    state: ControllerState, submissions: list[JobSubmission], owner: str, now: float, store: Store,
    queues: set[str] | frozenset[str] = frozenset(),
) -> tuple[Outcome, list[int]]:
    """`queues`: the configured queues besides "default", which always exists."""
    outcome = Outcome(reschedule=True)
    jobs = [_validated_job(state, spec, owner, now, store, n, {"default", *queues}) for n, spec in enumerate(submissions)]
    ids: list[int] = []
    for job in jobs:
        job.id = state.next_job_id
        state.next_job_id += 1
        state.jobs[job.id] = job
        ids.append(job.id)
        outcome.changes.new_jobs.append(job)
        outcome.changes.event(
            now, "submitted", job.id, name=job.name, tasks=job.indices.count,
            array=job.indices.describe() if job.is_array else None, held=job.fresh_state is JobState.HELD,
        )
    return outcome, ids


def _validated_job(
    state: ControllerState, spec: JobSubmission, owner: str, now: float, store: Store, position: int,
    queues: set[str],
) -> Job:
    where = f"job {position + 1} of the request: " if position else ""

    def bad(message: str) -> BadRequest:
        return BadRequest(where + message)

    if not spec.script.strip():
        raise bad("the job script is empty")
    if spec.queue not in queues:
        raise bad(f"unknown queue {spec.queue!r}; this cluster has {', '.join(sorted(queues))}")
    if len(spec.script.encode()) > MAX_SCRIPT_BYTES:
        raise bad(f"the job script is larger than {MAX_SCRIPT_BYTES // (1024 * 1024)} MiB")
    if spec.workdir and not os.path.isabs(spec.workdir):
        raise bad(f"the working directory must be an absolute path, not {spec.workdir!r}")
    if not spec.workdir and not spec.submit_dir:
        raise bad("a job that runs in a scratch directory (no working directory) needs its submit directory")
    staged_bytes = sum(len(file.data) for file in spec.stage_in)
    if staged_bytes > MAX_STAGE_IN_BYTES:
        raise bad(f"the stage-in files hold {staged_bytes / 2**20:.1f} MiB, more than the limit of "
                  f"{MAX_STAGE_IN_BYTES // 2**20} MiB per job")
    for name in [file.name for file in spec.stage_in] + spec.stage_out:
        if not is_relative_inside(name):
            raise bad(f"stage-in and stage-out names must be relative paths inside the working directory, not {name!r}")
    if any(char in spec.name for char in "\n\r\0") or not spec.name:
        raise bad("the job name must be one non-empty line")
    if spec.cpus < 1:
        raise bad(f"--cpus must be 1 or more, not {spec.cpus}")
    if spec.memory_mib < 0:
        raise bad("--mem must be zero or more")
    if spec.time_limit_s is not None and spec.time_limit_s < 1:
        raise bad("--time must be at least one second")
    if spec.priority not in PRIORITY_RANGE:
        raise bad(f"--priority must be between {PRIORITY_RANGE.start} and {PRIORITY_RANGE.stop - 1}")
    if spec.open_mode not in ("truncate", "append"):
        raise bad(f"the open mode must be 'truncate' or 'append', not {spec.open_mode!r}")
    for pattern in (spec.output, spec.error):
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
    for option, name in (("--signal", spec.warn_signal), ("--checkpoint-signal", spec.checkpoint_signal)):
        if name is not None and name not in signal.Signals.__members__:
            raise bad(f"{option}: unknown signal {name!r}")
    if spec.warn_signal is not None and spec.time_limit_s is None:
        raise bad("--signal warns before the time limit: it needs --time")
    if spec.array is not None:
        ranges, max_running = parse_array(spec.array)
        indices, is_array = TaskIndices(ranges), True
    else:
        indices, is_array, max_running = TaskIndices(), False, None
    resources = Resources(spec.cpus, spec.memory_mib)
    _check_fits_somewhere(state, resources, bad)
    for dependency in spec.after_ok:
        if dependency not in state.jobs and state.ended_state(dependency, store) is None:
            raise NotFound(where + f"--dependency names job {dependency}, which does not exist")
    job_spec: dict[str, Any] = {
        "script": spec.script,
        "workdir": spec.workdir,
        "submit_dir": spec.submit_dir or spec.workdir,
        "output": spec.output or default_output(is_array),
        "error": spec.error,
        "open_mode": spec.open_mode,
        "environment": spec.environment,
        "time_limit_s": spec.time_limit_s,
        "mail_user": spec.mail_user,
        "mail_type": spec.mail_type,
        "keep_spool": spec.keep_spool,
        "event_log": spec.event_log,
        "stage_in": [{"name": f.name, "data": base64.b64encode(f.data).decode(), "mode": f.mode} for f in spec.stage_in],
        "stage_out": spec.stage_out,
        "prolog": spec.prolog,
        "epilog": spec.epilog,
        "epilog_sets_exit": spec.epilog_sets_exit,
        "warn_signal": spec.warn_signal,
        "warn_before_s": spec.warn_before_s,
        "checkpoint_signal": spec.checkpoint_signal,
        "rerunnable": spec.rerunnable,
        "pty": spec.pty,
        "queue": spec.queue,
    }
    return Job(
        id=0, owner=owner, name=spec.name, submitted_at=now, priority=spec.priority,
        resources=resources, indices=indices, is_array=is_array, max_running=max_running,
        after_ok=tuple(spec.after_ok), spec=job_spec,
        fresh_state=JobState.HELD if spec.hold else JobState.PENDING,
    )


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


def is_relative_inside(name: str) -> bool:
    """A relative path that stays inside the directory it is relative to."""
    if not name or os.path.isabs(name) or "\0" in name:
        return False
    return ".." not in os.path.normpath(name).split(os.sep)
