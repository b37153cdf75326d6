"""A checkpointing job, on the shepherd's side: Grid Engine's shepherd "takes care of
checkpointing/migration of a job" and "forwards signals to the job, such as ... the checkpointing
signal"; its environment is checkpoint(5)'s (core/checkpoints.py made it the attempt's record).

  set up       RESTARTED (1 on a restart, else 0), SGE_CKPT_ENV and SGE_CKPT_DIR in the job's
               environment; the checkpoint directory made as the job's owner; on a restart the
               spool record `checkpointed` holds "1" ("If a checkpointed job is restarted,
               shepherd writes a "1" into this file")
  CHECKPOINT   (from the execd: `drover checkpoint`) and every `interval_s` of run time ('m'):
               the ckpt_command (application-level), else the signal to the job's process group
  MIGRATE      (from the execd: `drover migrate`, a suspend with 'x'): the migr_command, else the
               signal; then the job is stopped as a requeue stops it (warning signal, grace,
               SIGKILL), and the controller runs it again as a new attempt
  after        a job that ended on its own, not for a migration: the clean_command

Commands run as the job's owner, in its working directory, with its environment and output
files, inside the attempt's containment, never through a shell; $job_pid is filled in here, the
other placeholders were by the controller. Their exit status means what GE's man page says of
the checkpoint method: "Success, except for kernel checkpointing: checkpoint was not successful,
did not happen (but migration will happen)": a failed one is written in the trace, and a
migration goes on. A request that comes while the job is starting is not acted on: "If a new
checkpointing is requested during startup of the job, no new checkpoint will be written."
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from drover.method_command import substitute
from drover.records import AttemptCheckpoint
from drover.shepherd.containment import Containment
from drover.shepherd.failure import StartFailure
from drover.shepherd.identity import Identity, acting_as
from drover.shepherd.processes import ProcessOptions, start
from drover.spool import layout
from drover.spool.atomic import write_atomically

CHECKPOINT = int(signal.SIGRTMIN) + 1  # the execd to the shepherd: checkpoint the job now
MIGRATE = int(signal.SIGRTMIN) + 2  # the execd to the shepherd: checkpoint it, then stop it for a requeue
REQUESTS = frozenset({CHECKPOINT, MIGRATE})
POLL_S = 0.1  # how often a running checkpoint command is looked at


def environment(record: AttemptCheckpoint) -> dict[str, str]:
    """What the job's environment gets (submit(1)'s RESTARTED; GE's execd's SGE_CKPT_ENV and SGE_CKPT_DIR)."""
    added = {"RESTARTED": "1" if record["restarted"] else "0", "SGE_CKPT_ENV": record["name"]}
    if record["ckpt_dir"]:
        added["SGE_CKPT_DIR"] = record["ckpt_dir"]
    return added


def verify(record: AttemptCheckpoint | None, identity: Identity | None) -> None:
    """GE's verify_method, "Validity of the checkpointing interface", before the job runs: each
    command's program exists and the job's owner may run it; else the job does not start, and the
    reason names the environment (StartFailure)."""
    if record is None:
        return
    for which in ("ckpt_command", "migr_command", "clean_command"):
        command = record[which]
        if not command:
            continue
        with acting_as(identity):
            runnable = os.path.isfile(command[0]) and os.access(command[0], os.X_OK, effective_ids=True)
        if not runnable:
            raise StartFailure(f"checkpoint environment {record['name']}: {which} {command[0]} is not a program "
                               "the job's owner may run; the job did not run")


def prepare(record: AttemptCheckpoint, spool: layout.SpoolDir, identity: Identity | None) -> list[str]:
    """Before the job starts: the checkpoint directory (as the owner) and, on a restart, the
    `checkpointed` record; trace lines for what went wrong."""
    problems: list[str] = []
    if record["restarted"]:
        write_atomically(spool.record(layout.CHECKPOINTED), b"1\n")
    if record["ckpt_dir"]:
        try:
            with acting_as(identity):
                os.makedirs(record["ckpt_dir"], mode=0o700, exist_ok=True)
        except OSError as error:
            problems.append(f"{time.time():.6f} checkpoint directory {record['ckpt_dir']}: {error.strerror or error}")
    return problems


class Checkpointing:
    """The checkpoints of one running job; supervise.py calls it from its loop."""

    def __init__(self, record: AttemptCheckpoint, spool: layout.SpoolDir, popen_options: ProcessOptions,
                 containment: Containment, grace_s: float, timeout_s: float) -> None:
        self.record = record
        self.spool = spool
        self.options = popen_options  # the job's own: its owner, working directory, environment, files
        self.containment = containment
        self.grace_s = grace_s  # after the signal, how long a migrating job has to save its state
        self.timeout_s = timeout_s  # the longest a command may take
        self.trace: list[str] = []
        self.job_pid = 0
        self.next_at: float | None = None  # the next periodic checkpoint ('m')
        self.command: subprocess.Popen[bytes] | None = None
        self.command_why = ""
        self.command_deadline = 0.0
        self.migrating = False
        self.stop_at: float | None = None  # when the migrating job is stopped
        self.migrated = False
        self.suspended = False  # frozen (drover suspend): nothing of it, or of a command, could run

    def started(self, job_pid: int, now: float, early: list[int]) -> None:
        """The job runs; `early`: the requests that came while it was starting, which are not acted on."""
        self.job_pid = job_pid
        if self.record["interval_s"]:
            self.next_at = now + self.record["interval_s"]
        for signum in early:
            if signum == CHECKPOINT:
                self._note("a checkpoint was asked for while the job was starting: no new checkpoint is written")
            elif signum == MIGRATE:
                self.request(MIGRATE, now)

    def wake_at(self) -> float | None:
        times = [t for t in (self.next_at, self.stop_at) if t is not None]
        if self.command is not None:
            times.append(time.monotonic() + POLL_S)
        return min(times) if times else None

    def request(self, signum: int, now: float) -> None:
        if signum == CHECKPOINT:
            self._checkpoint("asked", "ckpt_command", now)
        elif not self.migrating:
            self.migrating = True
            self.next_at = None  # GE: "disable regular checkpoint"
            self._checkpoint("migration", "migr_command", now)

    def step(self, now: float) -> bool:
        """Take what is due; True once, when a migrating job is to be stopped now."""
        self._reap(now)
        if self.next_at is not None and now >= self.next_at:
            interval = self.record["interval_s"] or 0
            self.next_at = now + interval
            self._checkpoint("periodic", "ckpt_command", now)
        if self.stop_at is not None and now >= self.stop_at:
            self.stop_at = None
            self.migrated = True
            return True
        return False

    def finish(self, ended_on_its_own: bool) -> None:
        """After the job: a command still running is ended; the clean_command follows a job that
        ended on its own (GE: not "due to checkpoint")."""
        if self.command is not None:
            if self.command.poll() is None:  # the job is gone: there is nothing left to checkpoint
                self._end_command()
            self._reap(time.monotonic())
        clean = self.record["clean_command"]
        if clean and ended_on_its_own and not self.migrating:
            process = self._start(clean)
            if process is None:
                return
            try:
                code = process.wait(timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                code = process.wait()
            self._note(f"clean_command exited {_status(code)}")

    # -- inside -------------------------------------------------------------------------------

    def _checkpoint(self, why: str, which: str, now: float) -> None:
        if self.suspended and why != "migration":
            self._note(f"checkpoint ({why}): the job is suspended; no new checkpoint is written")
            return
        if self.command is not None:
            self._note(f"checkpoint ({why}): the last one still runs; no new checkpoint is written")
            if why == "migration":
                self.stop_at = None  # stopped when that one is done (_reap)
            return
        command = self.record["migr_command" if which == "migr_command" else "ckpt_command"]
        if command is None and which == "migr_command":
            command = self.record["ckpt_command"]  # no migr_command: a checkpoint as any other
        if command is not None:
            self.command = self._start(command)
            self.command_why, self.command_deadline = why, now + self.timeout_s
            if self.command is None and why == "migration":
                self.stop_at = now
            return
        signum = signal.Signals[self.record["signal"]] if self.record["signal"] else None
        if signum is None:
            self._note(f"checkpoint ({why}): the environment has neither a command nor a signal")
        else:
            try:
                os.killpg(self.job_pid, signum)
            except (ProcessLookupError, PermissionError):
                pass
            self._note(f"checkpoint ({why}): sent {signum.name} to the job")
            self._mark_checkpointed()
        if why == "migration":
            self.stop_at = now + self.grace_s  # the job's time to save its state, and perhaps exit

    def _start(self, command: list[str]) -> subprocess.Popen[bytes] | None:
        pid = str(self.job_pid)
        argv = [substitute(word, lambda name: pid if name == "job_pid" else None) for word in command]
        self.containment.enter()
        try:
            return start(argv, self.options)
        except OSError as error:
            self._note(f"cannot start {argv[0]}: {error.strerror or error}: the checkpoint did not happen")
            return None
        finally:
            self.containment.leave()

    def _reap(self, now: float) -> None:
        if self.command is None:
            return
        code = self.command.poll()
        if code is None and now < self.command_deadline:
            return
        if code is None:
            self._end_command()
            code = self.command.wait()
        self.command = None
        which = "migr_command" if self.command_why == "migration" else "ckpt_command"
        if code == 0:
            self._note(f"checkpoint ({self.command_why}): {which} exited 0")
            self._mark_checkpointed()
        else:
            self._note(f"checkpoint ({self.command_why}): {which} exited {_status(code)}: the checkpoint was not "
                       "successful, did not happen" + (" (the migration goes on)" if self.migrating else ""))
        if self.migrating and not self.migrated:
            self.stop_at = now

    def _end_command(self) -> None:
        assert self.command is not None
        try:
            os.killpg(self.command.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.command.wait()

    def _mark_checkpointed(self) -> None:
        """GE: a checkpoint "is in the arena": the `checkpointed` record holds "1"."""
        write_atomically(self.spool.record(layout.CHECKPOINTED), b"1\n")

    def _note(self, line: str) -> None:
        self.trace.append(f"{time.time():.6f} {line}")


def _status(code: int) -> str:
    return str(code) if code >= 0 else f"on signal {-code}"
