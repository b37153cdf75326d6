"""Watch the running job: forward signals to its process group, enforce the time limit, and on
a terminate request or at the time limit run the sequence warning signal → grace → SIGKILL.

GE shepherd, "Running the job": the parent waits for the child to exit; signals to deliver go
to the process group of its child. What each signal sent to the shepherd means (GE manpage: the
shepherd "forwards signals to the job, such as the signals for suspension, enabling,
termination and the checkpointing signal"):

  SIGTERM              terminate: the warning signal, a grace period, SIGKILL (cancel, requeue)
  SIGTSTP / SIGCONT    suspend / enable: freeze or thaw the whole attempt (escapees too)
                       (each of these three as the queue's methods and --notify say: control.py)
  FORWARDED            to the job's process group as it came: the job's own signals (SIGUSR1,
                       SIGUSR2, SIGHUP, SIGINT …) and the job's checkpoint signal, if it has one
  SIGTTIN              read the spool's `signal` record and send the signals new in it to the
                       job's process group (GE process flow, spool file "signal"): how the job
                       gets a SIGTERM, SIGTSTP, SIGCONT or SIGTTIN of its own, and SIGKILL and
                       SIGSTOP, which the shepherd cannot catch (spool/signal_record.py)
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
from drover.shepherd.control import JobControl
from drover.shepherd.pty_relay import PtyRelay
from drover.shepherd.signals import HANDLED, SignalInbox, signal_name
from drover.spool.signal_record import READ_RECORD, SignalReader

FORWARDED = (  # to the job's process group, as they came
    signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM,
    signal.SIGWINCH, signal.SIGURG, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGVTALRM, signal.SIGPROF,
    signal.SIGPWR, signal.SIGTTOU,
)
TERMINATE = signal.SIGTERM  # sent to the shepherd: stop the job (cancel)
SUSPEND = signal.SIGTSTP  # sent to the shepherd: freeze the whole attempt
RESUME = signal.SIGCONT  # sent to the shepherd: thaw it
JOB_SIGNALS = frozenset({TERMINATE, SUSPEND, RESUME, READ_RECORD, *FORWARDED})  # what the execd may send the shepherd
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
    events: list[str] = field(default_factory=list)  # trace lines: what the shepherd did to the job meanwhile


def supervise(job_pid: int, inbox: SignalInbox, time_limit_s: int | None, kill_grace_s: float,
              containment: Containment, warning: tuple[int, float] | None = None,
              relay: PtyRelay | None = None, checkpoint: int | None = None,
              before_start: Sequence[int] = (), by_record: SignalReader | None = None,
              control: JobControl | None = None, checkpointing: Checkpointing | None = None) -> Ending:
    """`warning`: (signal, seconds) — send that signal to the job that long before its time limit.
    `relay`: an interactive job's terminal, relayed to its user while the job runs.
    `checkpoint`: the job's checkpoint signal, forwarded like FORWARDED.
    `before_start`: the signals that came before the job started, in order (see the module's
    docstring).
    `by_record`: the spool's `signal` record, read once now (what the execd wrote before the job
    started) and on each SIGTTIN.
    `control`: how the job is suspended, resumed and stopped (control.py: the queue's methods,
    --notify); by default freeze, thaw, and SIGTERM → grace → SIGKILL.
    `checkpointing`: a checkpointing job's checkpoints and migration (checkpoint.py)."""
    if control is None:
        control = JobControl({}, containment, kill_grace_s)
    control.start(job_pid)
    forwarded = frozenset(FORWARDED) | ({checkpoint} if checkpoint in HANDLED - {TERMINATE, SUSPEND, RESUME} else set())
    # Handled on the first turn of the loop; the record is read first, whether or not its SIGTTIN came.
    arrived = ([READ_RECORD] if by_record is not None else []) + list(before_start)
    pidfd = os.pidfd_open(job_pid)
    started = time.monotonic()
    deadline = started + time_limit_s if time_limit_s else None
    if checkpointing is not None:
        checkpointing.started(job_pid, started, [signum for signum in arrived if signum in REQUESTS])
        arrived = [signum for signum in arrived if signum not in REQUESTS]
    watch = _Watch(job_pid, containment, control, forwarded, by_record, checkpointing, warning,
                   deadline=deadline, warn_at=deadline - warning[1] if deadline is not None and warning else None,
                   ready_by=started + READY_WAIT_S, arrived=arrived)
    try:
        while True:
            now = time.monotonic()
            watched = [pidfd, inbox.fileno(), *(relay.fds() if relay else [])]
            ready, _, _ = select.select(watched, [], [], max(watch.wake_at(now) - now, 0))
            if pidfd in ready:
                break
            if relay is not None:
                for fd in ready:
                    if fd in relay.fds():
                        relay.handle(fd)
            came = [(True, signum) for signum in watch.arrived] + [(False, signum) for signum in inbox.drain()]
            watch.arrived = []
            for early, signum in came:
                watch.handle(signum, early)
            watch.send_kept()
            watch.ignored += inbox.drain_faults()
            watch.check()
    finally:
        os.close(pidfd)
    _, wait_status, rusage = os.wait4(job_pid, 0)
    if relay is not None:
        relay.finish()
    watch.ignored += inbox.drain_faults()
    # The control's own lines (notices, methods and their ends) among the loop's, in time order:
    # each line starts with its time, printed to the microsecond.
    events = sorted(watch.events + control.finish())
    return Ending(wait_status, rusage, watch.timed_out, watch.terminated,
                  watch.out_of_memory or containment.oom_killed(), watch.ignored, events)


@dataclass(slots=True)
class _Watch:
    """What supervise keeps while the job runs, and what it does on each turn of its loop."""

    job_pid: int
    containment: Containment
    control: JobControl
    forwarded: frozenset[int]  # FORWARDED, and the job's checkpoint signal
    by_record: SignalReader | None
    checkpointing: Checkpointing | None
    warning: tuple[int, float] | None
    deadline: float | None  # the time limit, on the monotonic clock
    warn_at: float | None  # when the warning signal goes
    ready_by: float  # a kept signal goes by then, whether or not the job is ready for it
    arrived: list[int]  # signals that came before the job started, handled on the loop's next turn
    kept: deque[int] = field(default_factory=deque)  # the job's own signals waiting until it is ready for them
    ignored: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    timed_out: bool = False
    terminated: bool = False
    out_of_memory: bool = False

    def note(self, what: str) -> None:
        self.events.append(f"{time.time():.6f} {what}")

    def stop(self, why: str) -> None:
        self.note(why)
        self.control.stop()

    def wake_at(self, now: float) -> float:
        """When the loop must look again, whatever comes before."""
        watch_memory = self.containment.memory_limit_mib > 0
        return min(t for t in (self.deadline, self.control.wake_at(), self.warn_at,
                               now + (OOM_POLL_S if watch_memory else 3600),
                               now if self.arrived else None, now + READY_POLL_S if self.kept else None,
                               self.checkpointing.wake_at() if self.checkpointing is not None else None)
                   if t is not None)

    def handle(self, signum: int, early: bool) -> None:
        """What a signal sent to the shepherd means (the module's docstring); `early`: it came
        before the job started."""
        checkpointing, control = self.checkpointing, self.control
        if checkpointing is not None and signum in (SUSPEND, RESUME):
            checkpointing.suspended = signum == SUSPEND  # a frozen job is not checkpointed (checkpoint.py)
        if checkpointing is not None and signum in REQUESTS:
            checkpointing.request(signum, time.monotonic())
        elif signum == TERMINATE and not control.stopping:
            self.terminated, self.deadline = True, None
            self.stop("stop requested")
        elif signum == SUSPEND:
            self.note("suspend requested")
            control.suspend()
        elif signum == RESUME:
            self.note("resume requested")
            control.resume()
        elif signum == READ_RECORD:
            self._read_record(early)
        elif signum in self.forwarded and (early or self.kept):
            self.kept.append(signum)  # after those kept before it: in the order they came
        elif signum in self.forwarded:
            _killpg(self.job_pid, signum)
            self.note(f"{signal_name(signum)} forwarded to the job")
        elif signum != TERMINATE:  # a second SIGTERM: the stop is under way already
            self.ignored.append(f"{time.time():.6f} ignored {signal_name(signum)}")

    def _read_record(self, early: bool) -> None:
        for named in self.by_record.new() if self.by_record is not None else ():
            if named in (signal.SIGKILL, signal.SIGSTOP):
                _killpg(self.job_pid, named)  # no process can catch them: nothing to wait for
                self.note(f"{signal_name(named)} (spool record signal) to the job")
            elif early or self.kept:
                self.kept.append(named)
            else:
                _killpg(self.job_pid, named)
                self.note(f"{signal_name(named)} (spool record signal) to the job")

    def send_kept(self) -> None:
        """The kept signals the job is ready for, in the order they came."""
        while self.kept and (time.monotonic() >= self.ready_by or takes(self.job_pid, self.kept[0])):
            sent = self.kept.popleft()
            _killpg(self.job_pid, sent)
            self.note(f"{signal_name(sent)} (kept until the job was ready) to the job")

    def check(self) -> None:
        """The attempt's memory, the warning and the time limit, a migration, the stop's grace."""
        containment, control = self.containment, self.control
        if containment.memory_limit_mib > 0 and not self.out_of_memory and containment.oom_killed():
            # The kernel killed one process; the attempt as a whole is over (a shell whose
            # child was killed could otherwise go on, and exit 0).
            self.out_of_memory = True
            containment.kill_all()
            self.note("out of memory: the attempt killed")
        now = time.monotonic()
        if self.warn_at is not None and now >= self.warn_at and self.warning is not None:
            _killpg(self.job_pid, self.warning[0])  # the job's own warning, before its time is up
            self.warn_at = None
            self.note(f"{signal_name(self.warning[0])} to the job: its time limit is near")
        if self.deadline is not None and now >= self.deadline:
            self.timed_out, self.deadline = True, None
            self.stop("time limit reached")
        if self.checkpointing is not None and self.checkpointing.step(now) and not control.stopping:
            self.terminated, self.deadline = True, None  # migrated: stopped as a requeue stops it
            self.stop("migrated: stopped for its requeue")
        if control.tick():
            _killpg(self.job_pid, signal.SIGKILL)
            containment.thaw()  # a frozen process dies only once thawed (frozen again meanwhile)
            self.note("SIGKILL to the job: its grace is over")


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


def _killpg(job_pid: int, signum: int) -> None:
    try:
        os.killpg(job_pid, signum)  # the job leads its own process group
    except (ProcessLookupError, PermissionError):
        pass
