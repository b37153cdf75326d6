"""What the execd delivers for an order to signal an attempt: the shepherd's signal contract
(shepherd/supervise.py) and nothing else, whatever the order says. The controller checks the
signal too; this is the node's own line of defence, since the shepherd runs as root.

  terminate, suspend, resume   SIGTERM, SIGTSTP, SIGCONT to the shepherd, which stops, freezes
                               or thaws the whole attempt (or does what the queue's
                               suspend_method, resume_method, terminate_method say)
  the job's signals            to the shepherd, which forwards them to the job's process group
                               (supervise.FORWARDED, and the job's own checkpoint signal); one
                               that comes before the job started (its prolog runs) the shepherd
                               keeps until it has
  checkpoint, migrate          CHECKPOINT and MIGRATE to the shepherd, which checkpoints a
                               checkpointing job (and then stops it, for a migration); another
                               job's shepherd ignores them (shepherd/checkpoint.py)
  SIGTERM, SIGTSTP, SIGCONT,   the signals the shepherd cannot tell apart from an order (or
  SIGTTIN, SIGKILL, SIGSTOP    cannot catch at all), sent by name (`drover signal JOB TERM`):
                               Grid Engine's way, "(potentially another) signal": the name goes
                               into the spool's `signal` record and SIGTTIN to the shepherd,
                               which reads it there and sends it to the job's process group
                               (spool/signal_record.py)
"""

from __future__ import annotations

import logging
import os
import signal

from drover.shepherd.checkpoint import CHECKPOINT, MIGRATE
from drover.shepherd.signals import HANDLED
from drover.shepherd.supervise import FORWARDED, RESUME, SUSPEND, TERMINATE
from drover.spool import layout, signal_record
from drover.spool.atomic import read_text
from drover.spool.signal_record import BY_RECORD

log = logging.getLogger("drover.execd")

ACTIONS = {"terminate": TERMINATE, "suspend": SUSPEND, "resume": RESUME}
CHECKPOINTS = {"checkpoint": CHECKPOINT, "migrate": MIGRATE}
TO_SHEPHERD = frozenset(FORWARDED)


def delivery(action: str, checkpoint_signal: str | None = None) -> tuple[int, bool] | None:
    """(the signal, whether it goes by the spool's `signal` record rather than straight to the
    shepherd), or None if the order is refused."""
    if action in ACTIONS:
        return ACTIONS[action], False
    if action in CHECKPOINTS:
        return CHECKPOINTS[action], False
    signum = signal.Signals.__members__.get(action)
    if signum is None:
        return None
    if signum in BY_RECORD:
        return signum, True
    if signum in TO_SHEPHERD or (action == checkpoint_signal and signum in HANDLED):
        return signum, False
    return None


def signal_by_record(spool: layout.SpoolDir, shepherd_pid: int, signum: int) -> None:
    """GE process flow, spool file "signal": "If shepherd receives a SIGTTIN, it reads the
    signal to deliver from the spoolfile "signal" and sends this signal to the job's process
    group." Before the job has started (its prolog runs) the shepherd keeps it until it has.
    SIGKILL and SIGSTOP, once the job has started, go to its process group from here too:
    a stopped or frozen shepherd must not hold them up, and either sent twice means what it
    means once. `spool`: an attempt's, or a parallel job's task's (the same records)."""
    name = signal.Signals(signum).name
    try:
        signal_record.append(spool.record(layout.SIGNAL), signum)
    except OSError as error:
        log.warning("attempt %s: cannot write %s into the spool's signal record: %s", spool.name,
                    name, error.strerror or error)
    os.kill(shepherd_pid, signal_record.READ_RECORD)
    job_pid = read_text(spool.record(layout.JOB_PID))
    if job_pid and signum in (signal.SIGKILL, signal.SIGSTOP):
        os.killpg(int(job_pid.split()[0]), signum)
