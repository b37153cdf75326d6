"""Checkpointing jobs on the controller's side: a submission's environment checked, the
environment in each start order, and migration (Grid Engine's checkpoint(5), qsub -ckpt, -c)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from drover.core.checkpoints import Environment, for_attempt, in_effect, parse_occasion, values_for
from drover.core.errors import BadRequest
from drover.core.job import Attempt, Job
from drover.core.job_spec import JobSpec
from drover.protocol.api import JobSubmission
from drover.records import AttemptCheckpoint


@dataclass(frozen=True, slots=True)
class Checkpointing:
    """A submission's checkpoint environment and occasions, as its spec keeps them."""

    checkpoint: str | None = None
    checkpoint_when: str | None = None
    checkpoint_interval_s: int | None = None


def checked(spec: JobSubmission, environments: Mapping[str, Environment],
            bad: Callable[[str], BadRequest]) -> Checkpointing:
    """What a submission's --checkpoint and --checkpoint-interval add to its job's spec."""
    if spec.checkpoint is None:
        if spec.checkpoint_occasion is not None:
            raise bad("--checkpoint-interval (qsub -c) needs a checkpoint environment: --checkpoint NAME (-ckpt)")
        return Checkpointing()
    environment = environments.get(spec.checkpoint)
    if environment is None:
        known = ", ".join(sorted(environments)) or "none is configured ([checkpoints.NAME] in drover.toml)"
        raise bad(f"no checkpoint environment {spec.checkpoint!r}; known: {known}")
    if spec.checkpoint_signal is not None:
        raise bad(f"--checkpoint-signal and --checkpoint: checkpoint environment {environment.name!r} "
                  "says which signal the job gets; give one of them")
    when, interval_s = (None, None)
    if spec.checkpoint_occasion is not None:
        try:
            when, interval_s = parse_occasion(spec.checkpoint_occasion)
        except BadRequest as error:
            raise bad(str(error)) from None
    # The occasions are the job's from now on (GE keeps them with the job: qalter -c changes them).
    when = in_effect(environment, when, interval_s)[0]
    return Checkpointing(environment.name, when, interval_s)


def migrates_on_suspend(job: Job) -> bool:
    """checkpoint(5)'s 'x': a suspend checkpoints, stops and requeues the job instead."""
    return bool(job.spec.checkpoint) and "x" in (job.spec.checkpoint_when or "")


def for_order(spec: JobSpec, job: Job, attempt: Attempt,
              environments: Mapping[str, Environment]) -> AttemptCheckpoint | None:
    """The job's environment as its attempt's shepherd gets it; None for a job without one (or
    whose environment is no longer configured: it runs as a job that does not checkpoint).

    A task's later attempt is a restart (qsub(1): RESTARTED "is set to 1 if a job was restarted
    either after a system crash or after a migration in case of a checkpointing job")."""
    environment = environments.get(spec.checkpoint or "")
    if environment is None:
        return None
    when, interval_s = in_effect(environment, spec.checkpoint_when, spec.checkpoint_interval_s)
    values = values_for(environment, job_id=job.id, task_id=attempt.index, job_name=job.name, owner=job.owner,
                        host=attempt.node, queue=spec.queue)
    record = for_attempt(environment, values, when, interval_s, restarted=attempt.number > 1)
    # Named, never sent: the node runs the commands its own drover.toml gives this environment.
    record.update(ckpt_command=None, migr_command=None, clean_command=None)
    return record  # type: ignore[return-value]  # the same keys, built by the pure core
