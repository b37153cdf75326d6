"""The job spec, defined once: what a user asked of a job beyond what the scheduler reads (owner,
name, priority, resources, indices, dependencies: the Job's own fields) and beyond its payload
(core/job.py, JobPayload, stored apart).

`JobOptions` are the options a submission sends and the store keeps in the same shape: each
one's type, default and meaning is stated here and nowhere else. `JobSpec` is the stored spec:
those options as the controller checked them (signal names and resource requests in their
canonical spelling), and what the controller made of the user's own form (the output pattern
filled in, the parallel environment's slots a number, the checkpoint occasions parsed).
`JobSubmission` (protocol/api.py) is the same options and what only a submission has (the
script, the resources, `pe_slots` as a range, `checkpoint_occasion`); the one function that
turns a submission into a spec is controller/handlers/submit.py's `spec_of`.

Composed from a shared base rather than `JobSubmission(JobSpec)`: a few fields have another type
in the user's form than in the stored one (`output` may be None, `pe_slots` is a range string),
a msgspec subclass must keep its fields' types, and the API refuses unknown fields, so the
spec's own fields (`checkpoint_when`, `checkpoint_interval_s`) must not become fields a client
may send.

Stored as its canonical JSON, every field written (store/rows.py): an older Drover, which reads
some keys without a default, can still load the row. Read back in one place (store/rows.py,
`spec_from_text`): a key an older Drover did not write gets the default stated here, and a key
this Drover does not know (a newer one's, after a downgrade) is ignored.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any

import msgspec
import msgspec.inspect

from drover.core.patterns import default_output

# How a field travels beyond the store, marked on its annotation and read from there by those
# that act on it (a new option marked here needs no change anywhere else):
#   SIGNED           part of what the owner signs (cluster/signing.py), whatever its value;
#   SIGNED_WHEN_SET  the same, but only when set: a field signed since a later release, so that
#                    the credentials of jobs submitted before it still match;
#   variable(NAME)   the job finds its value in the environment variable NAME, when set;
#   shown(LABEL)     `drover show` prints it under LABEL, when set.
# The shepherd and the client read the marks from records.py, generated from this module
# (scripts/job_record.py), as they import no msgspec.
SIGNED = msgspec.Meta(extra={"signed": "always"})
SIGNED_WHEN_SET = msgspec.Meta(extra={"signed": "when_set"})


def variable(name: str) -> msgspec.Meta:
    return msgspec.Meta(extra={"variable": name})


def shown(label: str) -> msgspec.Meta:
    return msgspec.Meta(extra={"shown": label})


class JobOptions(msgspec.Struct, frozen=True, kw_only=True):
    """The options a submission and the stored spec share, with the zero-configuration defaults."""

    submit_dir: str = ""  # absolute; where the user submitted from (stored: the working directory if not given)
    error: Annotated[str | None, SIGNED] = None  # a pattern (core/patterns.py); None joins stderr into the output file
    open_mode: str = "truncate"  # or "append"
    time_limit_s: int | None = None  # stored: the queue's default time when the user gave none
    kill_on_invalid_dep: bool = True  # a dependency that can never be met cancels the job; else it waits
    mail_user: str | None = None
    mail_type: list[str] = []  # BEGIN, END, FAIL, REQUEUE, ARRAY_TASKS
    keep_spool: bool = False  # keep the attempt's spool directory on the node after cleanup
    event_log: Annotated[str | None, SIGNED_WHEN_SET] = None  # an absolute path: every event of the job appended as JSON lines, as the owner
    # jobd's zapthisjob, doneoutput and mailoutput: remove the job's output files when it ends;
    # put its output (stdout and stderr) in this file (a pattern) when it is done; mail it.
    zap: bool = False
    done_output: Annotated[str | None, SIGNED_WHEN_SET] = None
    mail_output: bool = False
    stage_out: Annotated[list[str], SIGNED] = []  # glob patterns in the working directory, copied back after it exits
    prolog: Annotated[str | None, SIGNED] = None  # the job's own prolog (Accelerator's precmd): fails the job if it fails
    epilog: Annotated[str | None, SIGNED] = None  # the job's own epilog (postcmd)
    # Accelerator's postcmd (firing sequence step 22): the exit status of the job's own epilog is
    # the job's; False keeps the job's own (`drover submit --no-epilog-sets-exit`).
    epilog_sets_exit: bool = True
    warn_signal: str | None = None  # Slurm's --signal: send this signal (e.g. "SIGUSR1")...
    warn_before_s: int = 60  # ...this long before the time limit
    checkpoint_signal: str | None = None  # what `drover checkpoint` sends the job (e.g. "SIGUSR2")
    rerunnable: bool = True  # requeued as a new attempt when its shepherd dies (--no-requeue: failed)
    pty: bool = False  # run under a pseudo-terminal, relayed to `drover run --pty`
    queue: str = "default"  # a queue of the cluster's ([queues.NAME] in drover.toml), with its methods
    gres: list[str] = []  # generic resources each task needs on its node: "gpu:2", "gpu:a100:1" (core/gres.py)
    licenses: dict[str, int] = {}  # cluster-wide counters each task holds while it runs ([licenses])
    constraint: str | None = None  # node features it needs: "avx512&bigmem", "a|b" (core/constraints.py)
    exclusive: bool = False  # each task has its node to itself (all its CPUs), as jobd's soleaccess
    # The owner's MUNGE credential over what the job runs (cluster/signing.py), made by their
    # `drover` where munged runs; nodes that require signed jobs check it before running anything.
    credential: Annotated[str, msgspec.Meta(max_length=8192)] | None = None
    # The Accelerator's named environments ([environments.NAME] of drover.toml), switched to in
    # this order before the job's prolog (`drover submit --environment A+B`).
    environments: Annotated[list[str], msgspec.Meta(max_length=64)] = []
    # Grid Engine's -pe NAME: a parallel environment of the cluster's (controller/handlers/parallel_envs.py).
    pe: str | None = None
    # Its own slots on each node, in place of its PE's allocation rule (the integer rule N: N slots
    # on each node it gets); Slurm's -N with --ntasks-per-node × --cpus-per-task.
    pe_per_node: int | None = None
    # The job's own process limit (its cgroup's pids.max), at most its node's [execd] pids_max.
    pids_max: int | None = None
    # Grid Engine's qsub -notify: SIGUSR1 before a suspend, SIGUSR2 before a stop, the queue's
    # notify_s ahead (shepherd/notice.py).
    notify: bool = False
    # A checkpoint environment of the cluster's ([checkpoints.NAME]; qsub -ckpt; core/checkpoints.py).
    checkpoint: str | None = None
    # The user's own note about the job (sbatch --comment), kept with it and given back.
    comment: Annotated[Annotated[str, msgspec.Meta(max_length=1024)] | None, shown("comment"),
                       variable("DROVER_COMMENT")] = None


class JobSpec(JobOptions, frozen=True, kw_only=True):
    """The job as stored with it, validated once, when submitted (controller/handlers/submit.py),
    and carried to its node in each attempt's order (records.AttemptOrder). Changed only as a
    whole (`msgspec.structs.replace`), and then written again (`Changes.job(job, spec=True)`)."""

    workdir: Annotated[str, SIGNED] = ""  # absolute; "" runs the job in a scratch directory on its node
    # A pattern (core/patterns.py); when submitted: the user's, or the default for an array or not.
    output: Annotated[str, SIGNED] = default_output(is_array=False)
    pe_slots: int | None = None  # the slots each task holds of its `pe` (set with it), fixed when submitted
    # The checkpoint occasions and period the job asked for (qsub -c), overriding its environment's.
    checkpoint_when: str | None = None
    checkpoint_interval_s: int | None = None


def marked(mark: str) -> dict[str, Any]:
    """The spec's fields that carry `mark` (see above), each with the mark's value, in the spec's order."""
    return dict(_marked(mark))


@functools.cache
def _marked(mark: str) -> tuple[tuple[str, Any], ...]:
    info = msgspec.inspect.type_info(JobSpec)
    assert isinstance(info, msgspec.inspect.StructType)
    return tuple((field.name, field.type.extra[mark]) for field in info.fields
                 if isinstance(field.type, msgspec.inspect.Metadata) and field.type.extra and mark in field.type.extra)


def shown_options(spec: JobSpec) -> dict[str, str]:
    """The options marked to be shown that the job has set, by label, as text."""
    return {label: _text(getattr(spec, name)) for name, label in _marked("shown")
            if getattr(spec, name) != getattr(_DEFAULTS, name)}


def _text(value: object) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(item) for item in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


_DEFAULTS = JobSpec()
