"""GE shepherd: "it starts up to 5 child processes": prolog, parallel-environment start, the job,
parallel-environment stop, epilog — each optional — and the Accelerator's precmd and postcmd,
which are the job's own prolog and epilog. In firing order:

    node prolog → queue prolog → job prolog (precmd) → PE start → JOB
                → PE stop → job epilog (postcmd) → queue epilog → node epilog

PE start and stop run only for a job of a parallel environment: the node's, then its PE's
start_proc_args; its PE's stop_proc_args, then the node's (shepherd/parallel.py).

Each runs with bash, its output appended to the job's files. The job's own, and a PE's run as
the owner, run inside the attempt's containment, as the job's processes; the site's run outside
it, in the shepherd's own cgroup, so that no job's cpuset, memory limit or freeze reaches them.
The job's own methods run as the job does: as its owner, in its working directory, with its
environment, and so do a PE's procedures unless prefixed root@ (sge_pe(5): "An optional prefix
"user@" specifies the user under which this procedure is to be started"), which marks them as the
site's. The site's (node and queue level, the node's PE start and stop) run as the node daemon's user
(root on a shared node, as Slurm runs its Prolog and Epilog), in /, with a clean environment of
the attempt's facts (environment.site_environment): nothing the job set reaches them, and the
job's owner cannot signal them, so their failure is the node's, not one user's doing. What a failure means
is decided by the controller (core/exit_status.EXIT_TABLE); the shepherd only records which
method failed and how: a failure before the job means the job does not run.

When the job does not run (a method before it failed, a cancel, requeue or hold came before it
started, or it could not be started), the site's clean-up still follows its set-up: PE stop if PE
start ran, then the queue's and the node's epilogs; the job's own epilog follows only a job that
ran (shepherd/main.py, _clean_up_without_job, quotes the seeds).
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass

from drover.shepherd.config import ShepherdConfig
from drover.shepherd.processes import ProcessOptions, start
from drover.shepherd.signals import held_signals

BEFORE_JOB = (("prolog", "node"), ("prolog", "queue"), ("prolog", "job"), ("pe_start", "node"))
AFTER_JOB = (("pe_stop", "node"), ("epilog", "job"), ("epilog", "queue"), ("epilog", "node"))


@dataclass(frozen=True, slots=True)
class Method:
    step: str  # prolog, pe_start, pe_stop, epilog
    level: str  # node (the execd's config), queue (the job's queue's) or job (the job's own)
    command: str
    as_owner: bool = False  # a site's method that runs as the job's owner (a PE's procedure without root@)


def methods(config: ShepherdConfig, order: tuple[tuple[str, str], ...]) -> list[Method]:
    """The configured methods among `order` (BEFORE_JOB, AFTER_JOB)."""
    commands = {("prolog", "node"): config.node_prolog, ("prolog", "queue"): config.queue_prolog,
                ("prolog", "job"): config.job["prolog"], ("pe_start", "node"): config.node_pe_start,
                ("pe_stop", "node"): config.node_pe_stop, ("epilog", "job"): config.job["epilog"],
                ("epilog", "queue"): config.queue_epilog, ("epilog", "node"): config.node_epilog}
    found = []
    for step, level in order:
        command = commands[step, level]
        if command is not None and command.strip():
            found.append(Method(step, level, command))
    return found


def run(method: Method, options: ProcessOptions, timeout_s: float) -> int:
    """Run one method to its end; its exit status (128 + signal if killed, 124 on timeout).

    A site's method writes into pipes that the shepherd relays to the job's files afterwards,
    not into the job's files themselves: those are the owner's (a full quota, /dev/full), and a
    write the owner made fail must not fail the site's script and put the node in ERROR."""
    site = method.level != "job" and not method.as_owner
    with held_signals():  # the method starts with default signals (restore_signals, and its preexec_fn)
        process = start(["/bin/bash", "-c", method.command],
                        options.with_output(subprocess.PIPE, subprocess.PIPE) if site else options)
    try:
        out, err = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        # Its whole process group (it leads one): a child left holding the output pipes would
        # keep communicate() waiting, and a site's method is in no cgroup of the attempt's.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            process.kill()
        out, err = process.communicate()
        status = 124
    else:
        status = 128 - process.returncode if process.returncode < 0 else process.returncode
    if site:
        for fd, data in zip((options.stdout, options.stderr), (out, err), strict=True):
            _write_best_effort(fd, data)
    return status


def _write_best_effort(fd: int, data: bytes | None) -> None:
    """Append a site method's output to the job's file; a failure there is the owner's affair."""
    if not data:
        return
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError:
        pass
