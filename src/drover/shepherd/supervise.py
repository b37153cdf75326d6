"""Watch the running job: forward signals to its process group, enforce the time limit, and on
a terminate request or at the time limit run the sequence warning signal → grace → SIGKILL.

GE shepherd, "Running the job": the parent waits for the child to exit; signals to deliver go
to the process group of its child. What each signal sent to the shepherd means (GE manpage: the
shepherd "forwards signals to the job, such as the signals for suspension, enabling,
termination and the checkpointing signal"):

  SIGTERM              terminate: the warning signal, a grace period, SIGKILL (cancel, requeue)
  SIGTSTP / SIGCONT    suspend / enable: freeze or thaw the whole attempt (escapees too)
  FORWARDED            to the job's process group as it came: the job's own signals (SIGUSR1,
                       SIGUSR2, SIGHUP, SIGINT …) and the job's checkpoint signal, if it has one
  CHECKPOINT, MIGRATE  a checkpointing job's: checkpoint it; checkpoint it, then stop it as
                       SIGTERM does (checkpoint.py; ignored for any other job)
  anything else        not the job's business: ignored, and written in the trace

The job's own signals that came before the job existed (`drover signal` while the prolog ran)
were kept (signals.SignalInbox); they go to the job in the order they came, each as soon as the
job is ready for it: once the job's leading process (the shell running its script, or what that
shell exec'ed) catches or ignores it, as the kernel shows in /proc/PID/status. A shell reads its
`trap` lines only after it has started, so a signal sent the instant the job was born would meet
its default action (for SIGUSR1: the end of the job) instead of the job's handler. A job that
never catches it gets it READY_WAIT_S after it started, when it means what it would have meant
at once. Signals that come once the job runs are forwarded at once, after any still kept.
"""

from __future__ import annotations

import os
import resource
import select
import signal
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from drover.shepherd.checkpoint import REQUESTS, Checkpointing
from drover.shepherd.containment import Containment
from drover.shepherd.pty_relay import PtyRelay
from drover.shepherd.signals import HANDLED, SignalInbox, signal_name

FORWARDED = (  # to the job's process group, as they came
    signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM,
    signal.SIGWINCH, signal.SIGURG, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGVTALRM, signal.SIGPROF,
    signal.SIGPWR, signal.SIGTTIN, signal.SIGTTOU,
)
TERMINATE = signal.SIGTERM  # sent to the shepherd: stop the job (cancel)
SUSPEND = signal.SIGTSTP  # sent to the shepherd: freeze the whole attempt
RESUME = signal.SIGCONT  # sent to the shepherd: thaw it
JOB_SIGNALS = frozenset({TERMINATE, SUSPEND, RESUME, *FORWARDED})  # what the execd may send the shepherd
OOM_POLL_S = 0.25  # how often a memory-limited attempt's OOM-kill counter is read
READY_POLL_S = 0.01  # how often a job is looked at while a signal kept for it waits
READY_WAIT_S = 10.0  # a kept signal the job neither catches nor ignores goes this long after its start


@dataclass(slots=True)
class Ending:
    wait_status: int
    rusage: resource.struct_rusage
    timed_out: bool = False
    terminated: bool = False
    out_of_memory: bool = False
    ignored: list[str] = field(default_factory=list)  # trace lines: signals that were not the job's


def supervise(job_pid: int, inbox: SignalInbox, time_limit_s: int | None, kill_grace_s: float,
              containment: Containment, warning: tuple[int, float] | None = None,
              relay: PtyRelay | None = None, checkpoint: int | None = None,
              before_start: Sequence[int] = (), checkpointing: Checkpointing | None = None) -> Ending:
    """`warning`: (signal, seconds) — send that signal to the job that long before its time limit.
    `relay`: an interactive job's terminal, relayed to its user while the job runs.
    `checkpoint`: the job's checkpoint signal, forwarded like FORWARDED.
    `before_start`: the signals that came before the job started, in order (see the module's
    docstring).
    `checkpointing`: a checkpointing job's checkpoints and migration (checkpoint.py)."""
    forwarded = frozenset(FORWARDED) | ({checkpoint} if checkpoint in HANDLED - {TERMINATE, SUSPEND, RESUME} else set())
    arrived = list(before_start)  # handled on the first turn of the loop
    kept: deque[int] = deque()  # the job's own signals waiting until it is ready for them
    ignored: list[str] = []
    pidfd = os.pidfd_open(job_pid)
    watch_memory = containment.memory_limit_mib > 0
    out_of_memory = False
    started = time.monotonic()
    ready_by = started + READY_WAIT_S
    deadline = started + time_limit_s if time_limit_s else None
    if checkpointing is not None:
        checkpointing.started(job_pid, started, [signum for signum in arrived if signum in REQUESTS])
        arrived = [signum for signum in arrived if signum not in REQUESTS]
    warn_at = deadline - warning[1] if deadline is not None and warning else None
    kill_at: float | None = None  # set once the warning signal went out
    timed_out = terminated = False
    try:
        while True:
            now = time.monotonic()
            wake_at = min(t for t in (deadline, kill_at, warn_at, now + (OOM_POLL_S if watch_memory else 3600),
                                      now if arrived else None, now + READY_POLL_S if kept else None,
                                      checkpointing.wake_at() if checkpointing is not None else None)
                          if t is not None)
            watched = [pidfd, inbox.fileno(), *(relay.fds() if relay else [])]
            ready, _, _ = select.select(watched, [], [], max(wake_at - now, 0))
            if pidfd in ready:
                break
            if relay is not None:
                for fd in ready:
                    if fd in relay.fds():
                        relay.handle(fd)
            came = [(True, signum) for signum in arrived] + [(False, signum) for signum in inbox.drain()]
            arrived = []
            for early, signum in came:
                if checkpointing is not None and signum in (SUSPEND, RESUME):
                    checkpointing.suspended = signum == SUSPEND  # a frozen job is not checkpointed (checkpoint.py)
                if checkpointing is not None and signum in REQUESTS:
                    checkpointing.request(signum, time.monotonic())
                elif signum == TERMINATE and kill_at is None:
                    terminated, deadline = True, None
                    kill_at = _warn(job_pid, kill_grace_s)
                elif signum == SUSPEND:
                    containment.freeze()
                elif signum == RESUME:
                    containment.thaw()
                elif signum in forwarded and (early or kept):
                    kept.append(signum)  # after those kept before it: in the order they came
                elif signum in forwarded:
                    _killpg(job_pid, signum)
                elif signum != TERMINATE:  # a second SIGTERM: the stop is under way already
                    ignored.append(f"{time.time():.6f} ignored {signal_name(signum)}")
            while kept and (time.monotonic() >= ready_by or takes(job_pid, kept[0])):
                _killpg(job_pid, kept.popleft())
            ignored += inbox.drain_faults()
            if watch_memory and not out_of_memory and containment.oom_killed():
                # The kernel killed one process; the attempt as a whole is over (a shell whose
                # child was killed could otherwise go on, and exit 0).
                out_of_memory = True
                containment.kill_all()
            now = time.monotonic()
            if warn_at is not None and now >= warn_at and warning is not None:
                _killpg(job_pid, warning[0])  # the job's own warning, before its time is up
                warn_at = None
            if deadline is not None and now >= deadline:
                timed_out, deadline = True, None
                kill_at = _warn(job_pid, kill_grace_s)
            if checkpointing is not None and checkpointing.step(now) and kill_at is None:
                terminated, deadline = True, None  # migrated: stopped as a requeue stops it
                kill_at = _warn(job_pid, kill_grace_s)
            if kill_at is not None and now >= kill_at:
                _killpg(job_pid, signal.SIGKILL)
                kill_at = float("inf")
    finally:
        os.close(pidfd)
    _, wait_status, rusage = os.wait4(job_pid, 0)
    if relay is not None:
        relay.finish()
    ignored += inbox.drain_faults()
    return Ending(wait_status, rusage, timed_out, terminated, out_of_memory or containment.oom_killed(), ignored)


def takes(pid: int, signum: int) -> bool:
    """Whether process `pid` catches or ignores `signum` now (SigCgt, SigIgn in /proc/PID/status);
    True if it cannot be told (the process is gone: sending does no harm)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as file:
            status = file.read()
    except OSError:
        return True
    bit = 1 << (signum - 1)
    for line in status.splitlines():
        if line.startswith((b"SigCgt:", b"SigIgn:")) and int(line.split()[1], 16) & bit:
            return True
    return False


def _warn(job_pid: int, kill_grace_s: float) -> float:
    _killpg(job_pid, signal.SIGTERM)
    return time.monotonic() + kill_grace_s


def _killpg(job_pid: int, signum: int) -> None:
    try:
        os.killpg(job_pid, signum)  # the job leads its own process group
    except (ProcessLookupError, PermissionError):
        pass
