"""The checks of one submission: its paths, what its payload weighs, its output files and mail,
its numbers, signals and time, which need nothing of the cluster's state; and whether some node
the cluster knows could ever run it (`check_some_node_offers`), on the nodes given. Each raises
BadRequest in the user's words, naming the job of the request it is about."""

from __future__ import annotations

import math
import os
import pwd
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from drover.core.constraints import Constraint
from drover.core.errors import BadRequest
from drover.core.gres import Device, GresNeed, allocate
from drover.core.limits import (
    MAX_CPUS,
    MAX_MEMORY_MIB,
    MAX_PIDS,
    MAX_TIME_LIMIT_S,
    PRIORITY_RANGE,
    Limits,
    bounded,
    refuse,
)
from drover.core.node import Node
from drover.core.patterns import check_pattern
from drover.core.queues import Queue
from drover.core.resources import Resources
from drover.core.shown_text import has_control_characters
from drover.core.signals import job_signal
from drover.core.units import format_duration
from drover.protocol.api import JobSubmission


@dataclass(frozen=True, slots=True)
class Refusals:
    """The refusals of one job of a request, each naming it when the request has several."""

    where: str = ""  # "job 2 of the request: ", or "" for the first

    @classmethod
    def of(cls, position: int) -> Refusals:
        return cls(f"job {position + 1} of the request: " if position else "")

    def bad(self, message: str) -> BadRequest:
        return BadRequest(self.where + message)

    def over(self, what: str, limit: int, key: str, unit: str = "") -> BadRequest:
        return BadRequest(self.where + str(refuse(what, limit, key, unit)))


def check_payload(job: JobSubmission, limits: Limits, refusals: Refusals) -> None:
    """The script, staged-in files, environment and name: well formed and within the limits."""
    bad, over = refusals.bad, refusals.over
    if len(job.script.encode()) > limits.max_script_bytes:
        raise over("the job script", limits.max_script_bytes, "max_script_bytes", "bytes")
    if "\0" in job.script:  # a shell stops reading at it (Slurm's controller refuses it too)
        raise bad("the job script holds a NUL byte ('\\0'), which no shell script can")
    for staged in job.stage_in:
        if not 0 <= staged.mode <= 0o7777:
            raise bad(f"a staged file's mode must be between 0 and 0o7777, not {staged.mode}")
    staged_bytes = sum(len(file.data) for file in job.stage_in)
    if staged_bytes > limits.max_stage_in_bytes:
        raise over(f"the stage-in files ({staged_bytes / 2**20:.1f} MiB)", limits.max_stage_in_bytes,
                   "max_stage_in_bytes", "bytes")
    if has_control_characters(job.name) or not job.name.strip():
        raise bad("the job name must be one non-empty line of printable characters (no control characters: "
                  "listings show it on other users' and operators' terminals)")
    if job.comment is not None and has_control_characters(job.comment):
        raise bad("the comment must be one line of printable characters (no control characters: listings "
                  "show it on other users' and operators' terminals)")
    if len(job.name.encode()) > limits.max_name_bytes:
        raise over("the job name", limits.max_name_bytes, "max_name_bytes", "bytes")
    if len(job.environment) > limits.max_env_vars:
        raise over(f"the environment ({len(job.environment)} variables)", limits.max_env_vars, "max_env_vars",
                   "variables")
    env_bytes = sum(len(k.encode()) + len(v.encode()) + 2 for k, v in job.environment.items())
    if env_bytes > limits.max_env_bytes:
        raise over(f"the environment ({env_bytes} bytes)", limits.max_env_bytes, "max_env_bytes", "bytes")
    if any("\0" in k or "=" in k or not k or "\0" in v for k, v in job.environment.items()):
        raise bad("environment names must be non-empty, without '=' or NUL bytes; values without NUL bytes")


def check_paths(job: JobSubmission, limits: Limits, refusals: Refusals) -> None:
    """Its directories, files and commands: no NUL byte, within the length limit, absolute where
    they must be, and staged names that stay inside the working directory."""
    bad = refusals.bad
    staged = [file.name for file in job.stage_in] + job.stage_out
    for option, path in (("the working directory", job.workdir), ("the submit directory", job.submit_dir),
                         ("--output", job.output), ("--error", job.error), ("--event-log", job.event_log),
                         *(("a staged file's name", name) for name in staged)):
        if path and "\0" in path:
            raise bad(f"{option} must not hold a NUL byte")
        if path and len(path.encode()) > limits.max_path_bytes:
            raise refusals.over(f"{option} ({len(path.encode())} bytes)", limits.max_path_bytes, "max_path_bytes",
                                "bytes")
    if job.workdir and not os.path.isabs(job.workdir):
        raise bad(f"the working directory must be an absolute path, not {job.workdir!r}")
    if job.submit_dir and not os.path.isabs(job.submit_dir):
        raise bad(f"the submit directory must be an absolute path, not {job.submit_dir!r}")
    for option, command in (("--prolog", job.prolog), ("--epilog", job.epilog)):
        if command is not None and "\0" in command:  # it runs as a command line, which cannot hold one
            raise bad(f"{option} must not hold a NUL byte")
    if not job.workdir and not job.submit_dir:
        raise bad("a job that runs in a scratch directory (no working directory) needs its submit directory")
    for name in staged:
        if not is_relative_inside(name):
            raise bad(f"stage-in and stage-out names must be relative paths inside the working directory, not {name!r}")
    if job.event_log is not None and not os.path.isabs(job.event_log):
        raise bad(f"the event log must be an absolute path without NUL bytes, not {job.event_log!r}")


def check_outputs_and_mail(job: JobSubmission, refusals: Refusals) -> None:
    """Its output files and their options (jobd's among them), and whom it mails, and when."""
    bad = refusals.bad
    if job.mail_user is not None:
        check_mail_user(job.mail_user, refusals.where)
    if job.open_mode not in ("truncate", "append"):
        raise bad(f"the open mode must be 'truncate' or 'append', not {job.open_mode!r}")
    if job.done_output is not None and job.error is not None:
        raise bad("--done-output holds stdout and stderr together: leave out --error")
    if job.zap and job.done_output is not None:
        raise bad("--zap removes the job's output, --done-output keeps it: give one of them")
    if job.zap and job.keep_spool:
        raise bad("--zap removes what the job leaves on its node, --keep-spool keeps it: give one of them")
    if job.mail_output and not job.mail_user:
        raise bad("--mail-output needs --mail-user (where to send the output)")
    for pattern in (job.output, job.error, job.done_output):
        if pattern is not None:
            if not pattern:
                raise bad("an output file name must not be empty")
            check_pattern(pattern)
    from drover.mail import MAIL_TYPES

    unknown = [kind for kind in job.mail_type if kind not in MAIL_TYPES]
    if unknown:
        raise bad(f"unknown mail type {', '.join(unknown)}; known: {', '.join(MAIL_TYPES)}")
    if job.mail_type and not job.mail_user:
        raise bad("--mail-type needs --mail-user (where to send the mail)")


@dataclass(frozen=True, slots=True)
class Timing:
    """What a submission's time and signals are once checked: its time limit under its queue's,
    and its signals by their canonical names."""

    time_limit_s: int | None
    warn_signal: str | None
    checkpoint_signal: str | None


def checked_numbers_and_time(job: JobSubmission, queue: Queue, refusals: Refusals) -> Timing:
    """Its CPUs, memory, process limit and priority within their bounds; its time limit under
    its queue's; its begin time finite; its signals ones a job may be sent."""
    where, bad = refusals.where, refusals.bad
    if job.cpus < 1:
        raise bad(f"--cpus must be 1 or more, not {job.cpus}")
    bounded(job.cpus, 1, MAX_CPUS, where + "--cpus")
    bounded(job.memory_mib, 0, MAX_MEMORY_MIB, where + "--mem (MiB)")
    if job.time_limit_s is not None:
        bounded(job.time_limit_s, 1, MAX_TIME_LIMIT_S, where + "--time (seconds)")
    time_limit_s = queue_time_limit(job.time_limit_s, queue, bad)
    bounded(job.warn_before_s, 0, MAX_TIME_LIMIT_S, where + "--signal's warning time (seconds)")
    if job.pids_max is not None:
        bounded(job.pids_max, 1, MAX_PIDS, where + "--pids-max")
    if job.priority not in PRIORITY_RANGE:
        raise bad(f"--priority must be between {PRIORITY_RANGE.start} and {PRIORITY_RANGE.stop - 1}")
    if job.begin_at is not None and not math.isfinite(job.begin_at):
        raise bad("--begin must be a finite time")
    warn_signal = job_signal(job.warn_signal, where + "--signal").name if job.warn_signal is not None else None
    checkpoint_signal = (job_signal(job.checkpoint_signal, where + "--checkpoint-signal").name
                         if job.checkpoint_signal is not None else None)
    if job.warn_signal is not None and time_limit_s is None:
        raise bad("--signal warns before the time limit: it needs --time")
    return Timing(time_limit_s, warn_signal, checkpoint_signal)


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


# What a refusal for want of a node says of the escape: a held job waits for nodes that come later.
HELD_ESCAPE = "submit it held (--hold) to keep it until a node that has it joins"


def check_some_node_offers(size: Resources, gres: Sequence[GresNeed], constraint: Constraint | None,
                           nodes: Collection[Node], held: bool, refusals: Refusals) -> None:
    """Refuse what no node the cluster knows could ever give, naming what none has, as Slurm
    refuses it ("Requested node configuration is not available") rather than let it wait for
    ever: a generic resource (GPUs) no node has, or not as many of as a task asks; node features
    no node has; or these and a task's `size` (CPUs, memory) on no one node. Accepted with no node known yet (a personal cluster
    starting up, whose node has not said hello) and when held (--hold): its nodes may come later."""
    if not nodes or held or not (gres or constraint is not None):
        return
    for need in gres:
        most = max(_count_of(need, node.devices) for node in nodes)
        if most < need.count:
            asked = f"{need.name}:{need.type}" if need.type else need.name
            have = f"the most one node has is {most}; " if most else ""
            raise refusals.bad(f"no node has gres {asked} (asked {need.count}); {have}nodes offer: "
                               f"{_offered_devices(nodes)}; {HELD_ESCAPE}")
    if constraint is not None and not any(constraint.matches(node.features) for node in nodes):
        offered = ", ".join(sorted({feature for node in nodes for feature in node.features})) or "none"
        raise refusals.bad(f"no node has the features {constraint.text} (--constraint); nodes offer: {offered}; "
                           f"{HELD_ESCAPE}")
    if not any(allocate(gres, node.devices) is not None and size.fits_in(node.total)
               and (constraint is None or constraint.matches(node.features)) for node in nodes):
        parts = [size.describe(), *(["gres " + ", ".join(map(str, gres))] if gres else []),
                 *([f"the features {constraint.text}"] if constraint is not None else [])]
        raise refusals.bad(f"no one node has all a task asks for together ({'; '.join(parts)}); nodes offer: "
                           f"{_offered_devices(nodes)}; {HELD_ESCAPE}")


def _count_of(need: GresNeed, devices: Sequence[Device]) -> int:
    return sum(1 for device in devices if device.name == need.name and (need.type is None or device.type == need.type))


def _offered_devices(nodes: Collection[Node]) -> str:
    """What the nodes have, each kind with the most one node has of it: "gpu:a100:2, nic:1"."""
    most: dict[str, int] = {}
    for node in nodes:
        counts: dict[str, int] = {}
        for device in node.devices:
            counts[str(device)] = counts.get(str(device), 0) + 1
        for kind, count in counts.items():
            most[kind] = max(most.get(kind, 0), count)
    return ", ".join(f"{kind}:{count}" for kind, count in sorted(most.items())) or "none"
