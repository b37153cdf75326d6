"""How the shepherd suspends, resumes and stops its job: Grid Engine's suspend_method,
resume_method and terminate_method (queue_conf(5)), and qsub -notify.

GE shepherd process flow, Initialization: "Check the configuration (verify_method): Terminate,
suspend, resume methods" — `verify` runs before anything of the job's (its prolog too): a method
that is no signal, or a command that is not absolute or that the job's owner cannot execute, is
the attempt's error, naming the method, and the job does not run.

Each action is, in order of what is configured:
  a signal     queue_conf(5): "the signal to be delivered instead of the default signal", sent to
               the job's process group;
  a command    started, not waited for (GE's start_async_command): as the job's owner, in the
               job's working directory and environment ("it is started in the same environment
               as for the job concerned"), stdin/stdout/stderr on /dev/null, in a process group of
               its own, outside the attempt's cgroup (a resume command must not start frozen);
               one at a time, as in GE ("previous command is still active": the next is skipped,
               and the trace says so). Its exit status goes to the trace; whatever it is, the
               action counts as done (the man page: "Suspend, restart, terminate, clean, and
               migrate: Always successful.");
  the default  suspend: freeze the whole attempt; resume: thaw it (and SIGCONT to the job's
               process group when the suspend was a configured method, GE's default resume
               signal); terminate: SIGTERM. An attempt the default suspend froze is thawed
               before a configured resume method acts: no signal or command could thaw it.
After a terminate by whichever means, SIGKILL follows the kill grace later, should the job
still be there.

qsub -notify (submit(1)): "If a SIGSTOP is pending, the job will receive a SIGUSR1 several seconds
before the SIGSTOP. If a SIGKILL is pending, the job will receive a SIGUSR2 several seconds before
the SIGKILL." The delay is the queue's notify (queue_conf(5): "The time to wait between delivery
of SIGUSR1/SIGUSR2 notification signals and suspend/kill signals"). As GE's shepherd does
(shepherd_deliver_signal): a resume while a suspend waits for its notice cancels the suspend; a
second suspend, or a suspend while a stop is under way, sends no second notice.
"""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Mapping

from drover.method_command import (
    METHOD_NAMES,
    CommandMethod,
    Method,
    SignalMethod,
    describe,
    expand,
    methods_in_effect,
)
from drover.shepherd.config import ShepherdConfig
from drover.shepherd.containment import Containment
from drover.shepherd.failure import StartFailure
from drover.shepherd.identity import Identity, acting_as
from drover.shepherd.processes import ProcessOptions, start
from drover.shepherd.signals import held_signals, reset_for_exec, signal_name

NOTIFY_SUSPEND = signal.SIGUSR1
NOTIFY_KILL = signal.SIGUSR2
COMMAND_WAIT_S = 5.0  # how long a method's command still running when the job ended is waited for


def verify(config: ShepherdConfig, identity: Identity | None) -> dict[str, Method]:
    """GE's verify_method: the attempt's methods in effect (its queue's, else its node's), each
    command checked as the job's owner, who runs it. Raises StartFailure naming the method."""
    node = dict(zip(METHOD_NAMES, (config.node_suspend_method, config.node_resume_method,
                                   config.node_terminate_method), strict=True))
    queue = dict(zip(METHOD_NAMES, (config.queue_suspend_method, config.queue_resume_method,
                                    config.queue_terminate_method), strict=True))
    try:
        chosen = methods_in_effect(node, queue)
    except ValueError as error:
        raise StartFailure(str(error)) from None
    for name, method in chosen.items():
        if isinstance(method, CommandMethod):
            with acting_as(identity):
                problem = _not_executable(method.path)
            if problem:
                raise StartFailure(f"{name}: {method.path}: {problem}")
    return chosen


def _not_executable(path: str) -> str | None:
    """Why the acting user cannot run `path`, or None."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as error:
        return (error.strerror or "cannot be looked at").lower()
    if not stat.S_ISREG(mode):
        return "not a regular file"
    if not os.access(path, os.X_OK, effective_ids=os.access in os.supports_effective_ids):
        return "not executable"
    return None


class JobControl:
    """Suspend, resume and terminate the job as the attempt's methods and --notify say."""

    def __init__(self, methods: Mapping[str, Method], containment: Containment, kill_grace_s: float,
                 notify_s: float | None = None, popen_options: ProcessOptions | None = None,
                 facts: Mapping[str, object] | None = None) -> None:
        self.methods = dict(methods)
        self.containment = containment
        self.kill_grace_s = kill_grace_s
        self.notify_s = notify_s
        self.popen_options = popen_options  # wherever a method is a command (main._job_control)
        self.facts = dict(facts or {})
        self.job_pid = 0
        self.trace: list[str] = []
        self.stopping = False  # a stop is under way (notice sent, or terminated)
        self.suspend_at: float | None = None  # a suspend waiting for its notice's time
        self.stop_at: float | None = None  # a stop waiting for its notice's time
        self.kill_at: float | None = None
        self._command: tuple[str, subprocess.Popen[bytes]] | None = None

    def start(self, job_pid: int) -> None:
        self.job_pid = job_pid
        self.facts["job_pid"] = job_pid

    # What came to the shepherd.

    def suspend(self) -> None:
        if self.stopping or self.suspend_at is not None:
            self._note("suspend: a stop or a suspend is under way; no second notice")
            return
        if self.notify_s is not None:
            self._signal(NOTIFY_SUSPEND, "notice of the suspend")
            self.suspend_at = time.monotonic() + self.notify_s
            return
        self._suspend_now()

    def resume(self) -> None:
        if self.suspend_at is not None:
            self.suspend_at = None
            self._note("resume: the suspend that waited for its notice is cancelled")
        method = self.methods.get("resume_method")
        if method is None or "suspend_method" not in self.methods:
            self.containment.thaw()  # the default; or the default suspend froze it, which nothing else undoes
        if method is not None:
            self._deliver("resume_method", method)
        elif "suspend_method" in self.methods:
            self._signal(signal.SIGCONT, "resume")

    def stop(self) -> None:
        """A terminate request or the time limit: the notice first where the job asked for it."""
        if self.stopping:
            return
        self.stopping, self.suspend_at = True, None
        if self.notify_s is not None:
            self._signal(NOTIFY_KILL, "notice of the stop")
            self.stop_at = time.monotonic() + self.notify_s
            return
        self._terminate_now()

    # The loop's timers.

    def wake_at(self) -> float | None:
        times = [t for t in (self.suspend_at, self.stop_at, self.kill_at) if t is not None]
        if self._command is not None:
            times.append(time.monotonic() + 0.05)
        return min(times) if times else None

    def tick(self) -> bool:
        """Act on what is due; True when the job is to be killed (SIGKILL) now."""
        now = time.monotonic()
        self._poll()
        if self.suspend_at is not None and now >= self.suspend_at:
            self.suspend_at = None
            self._suspend_now()
        if self.stop_at is not None and now >= self.stop_at:
            self.stop_at = None
            self._terminate_now()
        if self.kill_at is not None and now >= self.kill_at:
            self.kill_at = float("inf")
            return True
        return False

    def finish(self) -> list[str]:
        """After the job ended: wait a little for a command still running, then end it; the
        trace lines of everything done."""
        if self._command is not None:
            name, process = self._command
            try:
                process.wait(COMMAND_WAIT_S)
            except subprocess.TimeoutExpired:
                _killpg(process.pid, signal.SIGKILL)
                process.wait()
            self._poll()
        return self.trace

    # The actions.

    def _suspend_now(self) -> None:
        method = self.methods.get("suspend_method")
        if method is None:
            self.containment.freeze()
        else:
            self._deliver("suspend_method", method)

    def _terminate_now(self) -> None:
        method = self.methods.get("terminate_method")
        if method is None:
            self._signal(signal.SIGTERM, "terminate")
        else:
            self._deliver("terminate_method", method)
        # A suspended job is let go on to meet its stop (Grid Engine resumes a suspended job it
        # kills): frozen, it would see neither the terminate nor, after the grace, SIGKILL. The
        # containment thaws only what it froze: the subreaper's thaw is a SIGCONT, which a
        # running job would see.
        if "suspend_method" in self.methods:
            self._signal(signal.SIGCONT, "terminate of a job that may be stopped")
        else:
            self.containment.thaw()
        self.kill_at = time.monotonic() + self.kill_grace_s

    def _deliver(self, name: str, method: Method) -> None:
        if isinstance(method, SignalMethod):
            self._signal(method.signum, name)
            return
        self._poll()
        if self._command is not None:
            self._note(f"{name}: skipped: the {self._command[0]} (pid {self._command[1].pid}) still runs")
            return
        argv = expand(method.argv, self.facts)
        assert self.popen_options is not None, "a command method comes with the options it runs with"
        try:
            with held_signals():
                process = start(argv, self.popen_options)
        except OSError as error:
            self._note(f"{name}: {describe(method)}: cannot start: {error.strerror}")
            return
        self._command = (name, process)
        self._note(f"{name}: started {' '.join(argv)} (pid {process.pid})")

    def _poll(self) -> None:
        if self._command is None:
            return
        name, process = self._command
        code = process.poll()
        if code is None:
            return
        self._command = None
        status = 128 - code if code < 0 else code
        self._note(f"{name}: exited {status}" + ("" if status == 0 else "; done all the same"))

    def _signal(self, signum: int, why: str) -> None:
        _killpg(self.job_pid, signum)
        self._note(f"{why}: {signal_name(signum)} to the job")

    def _note(self, line: str) -> None:
        self.trace.append(f"{time.time():.6f} {line}")


def method_popen_options(env: Mapping[str, str], cwd: str, identity: Identity | None,
                         preexec: Callable[[], None] = reset_for_exec) -> ProcessOptions:
    """How a method's command runs (GE's start_async_command): as the job's owner, in its
    working directory and environment, on /dev/null, in a process group of its own; `preexec`
    gives it the job's signals, nice, CPUs and rlimits (GE: "setrlimits")."""
    user, group, extra_groups = identity.popen_ids() if identity is not None else (None, None, None)
    return ProcessOptions(cwd, dict(env), subprocess.DEVNULL, subprocess.DEVNULL, preexec, user, group, extra_groups)


def facts_of(config: ShepherdConfig) -> dict[str, object]:
    """queue_conf(5)'s placeholders but $job_pid, which the job's start adds."""
    task = config.task_index if config.is_array else 0
    return {"host": socket.gethostname(), "ja_task_id": task, "task_id": task, "job_owner": config.owner,
            "job_id": config.job_id, "job_name": config.name, "queue": config.job["queue"],
            "sge_cell": config.cluster or "default", "sge_root": sys.prefix}


def _killpg(pgid: int, signum: int) -> None:
    if pgid <= 0:
        return
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass
