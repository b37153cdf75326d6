"""Where each record of an attempt lives: ``<spool root>/<job>.<task>.<attempt>/<record>``.

In the spirit of Grid Engine's ``active_jobs/<jobid>.<taskid>``, with its file names:

  config        the attempt's spec as the execd received it (JSON; see records.AttemptConfig)
  job_script    the job script, run with bash
  pid           the shepherd's pid and its start time ("PID STARTTIME"), written first
  job_pid       the job's pid, written once it started
  error         why the job could not be started (text), if it could not
  usage         what the job used (JSON; see records.Usage)
  environment   the job's environment, NAME=VALUE lines (mode 0600)
  trace         what the shepherd did, when (text)
  containment   where the attempt's processes are held (JSON, mode 0600: the backend and its
                cgroups), written as soon as they exist: the execd ends them all from it if the
                shepherd dies (see records.ContainmentRecord)
  exit_status   how it ended (JSON; see records.ExitStatus), written last: its presence means done
  stage_in      the files to stage in, as the execd received them (JSON, base64 data); the
                shepherd writes them into the working directory as the job's owner
  stop_request  why the execd asked the shepherd to stop the job: cancel, requeue, hold or stray
                (JSON)
  signal        the signals the execd asked the shepherd to deliver to the job's process group
                as they are, not as what they mean to the shepherd (JSON, a list of names, only
                ever appended to): SIGKILL and SIGSTOP, which the shepherd cannot catch, and
                SIGTERM, SIGTSTP, SIGCONT and SIGTTIN, which it reads as orders. The execd
                appends the name and sends the shepherd SIGTTIN, which makes it read the new
                names and send them (spool.signal_record); one that comes before the job
                started is kept until it has
  reserve       room kept for the records of how the job ended: written by the execd before the
                shepherd starts (or an ended attempt's moved in whole: spool.spare_reserves),
                given back by the shepherd when the disk is full (spool.outcome)
  staged_out    what the shepherd collected, as the owner, for stage-out (JSON: files, skipped,
                refused); the copies themselves are in staged_out.d/<n>
  osjobid       what identifies the attempt's processes to the kernel: its cgroup directories,
                one line (or "subreaper PID SESSION" where there is no writable cgroup)
  processor_set_number  the CPUs the attempt was given, as a cpuset list, and its cpuset cgroup
                where one was made (one line); written only for an attempt given CPUs
  shepherd_about_to_exit  written once the job and every epilog are done, just before
                exit_status: from then on the attempt only records how it ended
  checkpointed  "1": a checkpointing job's attempt that is a restart, or whose job has a checkpoint
                (GE's spool file of that name; shepherd/checkpoint.py)

Every record is written whole by atomic rename (spool.atomic), readable by its writer only
(mode 0600): records hold the job's environment, its files and how it ended, which are the
owner's business and root's, no one else's. The execd learns everything from
these files, so a restarted execd picks up where the last one stopped. Records the execd keeps
for itself after the job exits (cleanup progress, the final record) live in the same directory.

The spool root also holds ``execd.sock``, a datagram socket on which the execd hears "started" and
"exited" hints from shepherds. Hints may be lost; the records are the truth.
"""

from __future__ import annotations

import os
import re

CONFIG = "config"
JOB_SCRIPT = "job_script"
PID = "pid"
JOB_PID = "job_pid"
ERROR = "error"
USAGE = "usage"
EXIT_STATUS = "exit_status"
ENVIRONMENT = "environment"
TRACE = "trace"
CONTAINMENT = "containment"
CLEANUP = "cleanup"
STAGE_IN = "stage_in"
STOP_REQUEST = "stop_request"
AFTER = "after"  # a promised attempt's: the name of the attempt whose end starts it (execd/attempts.py)
MOVED = "moved"  # a promised attempt started in place: the CPU ids it was moved to (execd/attempts.py)
SIGNAL = "signal"
STAGED_OUT = "staged_out"
RESERVE = "reserve"
STAGED_OUT_DIR = "staged_out.d"
CHECKPOINTED = "checkpointed"
MAIL_OUTPUT = "mail_output"  # the job's output, copied by the shepherd as its owner, for the end mail
PE_HOSTFILE = "pe_hostfile"  # GE's spool file of a parallel job: its hosts, slots and queues (mode 0644)
NOTIFY_SOCKET = "execd.sock"
# GE process flow, tight integration: "for each task a subdirectory <petaskid> is created that
# holds the task specific spool files" (execd/pe_tasks.py), in the attempt's directory.
PETASK_ID = re.compile(r"[1-9][0-9]{0,8}")
MADE_FOR_TASKS = "pe_tasks"  # in an attempt directory that is kept, or was made, for its PE tasks alone


def petask_names(attempt_dir: str) -> list[str]:
    """The PE tasks' subdirectories in an attempt's directory."""
    try:
        return [entry.name for entry in os.scandir(attempt_dir) if PETASK_ID.fullmatch(entry.name) and entry.is_dir()]
    except OSError:
        return []
OSJOBID = "osjobid"
PROCESSOR_SET_NUMBER = "processor_set_number"
SHEPHERD_ABOUT_TO_EXIT = "shepherd_about_to_exit"


class SpoolDir:
    """The records of one attempt. Cheap to build: it only joins paths."""

    __slots__ = ("path", "name")

    def __init__(self, root: str, name: str) -> None:
        self.name = name  # "<job>.<task>.<attempt>"
        self.path = os.path.join(root, name)

    @property
    def root(self) -> str:
        return os.path.dirname(self.path)

    def record(self, name: str) -> str:
        # A record's name is a plain name, never a path: no need of os.path.join's cases (an
        # absolute second part, a trailing slash), which cost more than the rest of a look-up.
        return f"{self.path}/{name}"

    @property
    def notify_socket(self) -> str:
        return os.path.join(self.root, NOTIFY_SOCKET)

    def exists(self) -> bool:
        return os.path.isdir(self.path)


ATTEMPT_NAME = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")  # "<job>.<task>.<attempt>": a name, never a path


def is_attempt_name(name: str) -> bool:
    """Whether `name` is an attempt's name: a node makes a directory of it, as root, only if it is
    (an order's name such as ../../etc/x would make it write where the controller points). Digits
    of any length: a node needs only that the name is no path; the controller, which makes the
    names, reads them within what its store holds (core/ids.bounded_attempt_key: not used here,
    as the shepherd imports this module and nothing of drover.core)."""
    return ATTEMPT_NAME.fullmatch(name) is not None


def attempt_names(root: str) -> list[str]:
    """Names of the attempt directories under a spool root, oldest job first."""
    try:
        names = [entry.name for entry in os.scandir(root) if entry.is_dir() and entry.name[0].isdigit()]
    except FileNotFoundError:
        return []

    def key(name: str) -> tuple[int, ...]:
        return tuple(int(part) for part in name.split(".") if part.isdigit())

    return sorted(names, key=key)
