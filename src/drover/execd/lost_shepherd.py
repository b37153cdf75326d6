"""A shepherd died without recording how its job ended (SIGKILL by root, the OOM killer, a bug):
end everything of its attempt, remove what it held, and record a system failure.

The shepherd writes where its attempt's processes are held (the spool's `containment` record,
mode 0600) as soon as it has made the containment, so the execd can end the whole of it, not
only the job's process group — also after an execd restart:

  cgroup-v2  cgroup.kill (before Linux 5.14: freeze, SIGKILL every member, thaw), until empty
  cgroup-v1  the freezer: freeze, SIGKILL every member, thaw, until empty
  subreaper  no cgroup holds the job: the execd kills the job's process group and, when the
             shepherd led its own session (as every shepherd the fork server starts does), every
             process of that session. The limit of this backend: a process that left both
             (setsid) was orphaned to init when the shepherd died, and nothing names it as the
             attempt's any more; only a cgroup would.

Then the attempt's cgroups are removed. What the failure means for the job (a requeue, when the
job may run again) is decided with every other exit meaning, in core/exit_status.py.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time

from drover.execd import attempt_records
from drover.records import ContainmentRecord, ExitStatus
from drover.shepherd.containment.v1 import CgroupV1
from drover.shepherd.containment.v2 import CgroupV2
from drover.spool import layout
from drover.spool.atomic import read_text
from drover.spool.outcome import write_outcome

log = logging.getLogger("drover.execd")

CGROUP_ROOT = "/sys/fs/cgroup/"
KILL_DEADLINE_S = 10.0


def reason(wait_status: int | None, about_to_exit: bool = False) -> str:
    """The attempt's failure, in the words `drover show` prints. `about_to_exit`: the shepherd had
    written GE's `shepherd_about_to_exit`, so the job and its epilogs had ended."""
    how = ""
    if wait_status is not None and os.WIFSIGNALED(wait_status):
        how = f" (signal {os.WTERMSIG(wait_status)})"
    elif wait_status is not None and os.WIFEXITED(wait_status):
        how = f" (exit status {os.WEXITSTATUS(wait_status)})"
    when = " after the job and its epilogs had ended," if about_to_exit else ""
    return f"the shepherd died{how}{when} before recording how the job ended"


def end_attempt(spool: layout.SpoolDir) -> None:
    """SIGKILL every process of the attempt, then remove its cgroups."""
    # Written by the shepherd, which may have died writing it: its type checked on reading,
    # and each cgroup path checked to be this attempt's own before anything is killed or removed.
    record = attempt_records.containment(spool)
    cgroups = {controller: path for controller, path in (record["cgroups"] if record else {}).items()
               if _is_attempt_cgroup(path, spool.name)}
    job_pid = _job_pid(spool)
    if record is None and job_pid is not None:  # a shepherd older than the record: its process group
        _kill_group(job_pid)
    backend = record["backend"] if record else None
    if backend == "cgroup-v2" and "" in cgroups:
        containment: CgroupV2 | CgroupV1 = CgroupV2(cgroups[""], "", 0)
    elif backend == "cgroup-v1" and "freezer" in cgroups:
        containment = CgroupV1(cgroups, {}, 0)
    else:
        _kill_session(record, job_pid)
        return
    containment.kill_all()
    containment.remove()


def record_loss(spool: layout.SpoolDir, wait_status: int | None) -> str:
    """The attempt's exit record: a system failure, not the job's. Returns the reason."""
    why = reason(wait_status, os.path.exists(spool.record(layout.SHEPHERD_ABOUT_TO_EXIT)))
    exit_status: ExitStatus = {
        "exit_code": None, "signal": None, "failure": why, "timed_out": False,
        "terminated": False, "out_of_memory": False, "shepherd_lost": True,
    }
    try:
        write_outcome(spool, spool.record(layout.ERROR), (why + "\n").encode(), patient=False)
        write_outcome(spool, spool.record(layout.EXIT_STATUS), json.dumps(exit_status).encode(), patient=False)
    except OSError as error:
        # Reported all the same: a missing exit record reads as this same system failure
        # (execd/attempt_records.py), so the outcome does not depend on the disk.
        log.error("attempt %s: cannot record the lost shepherd: %s", spool.name, error.strerror)
    return why


def _is_attempt_cgroup(path: object, attempt: str) -> bool:
    """Only ever an attempt's own cgroup: .../drover[-<cluster>]/<attempt> under the cgroup mount."""
    return (isinstance(path, str) and path.startswith(CGROUP_ROOT) and os.path.normpath(path) == path
            and os.path.basename(path) == attempt and os.path.basename(os.path.dirname(path)).startswith("drover"))


def _job_pid(spool: layout.SpoolDir) -> int | None:
    text = read_text(spool.record(layout.JOB_PID))
    try:
        return int(text.split()[0]) if text else None
    except ValueError:
        return None


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_session(record: ContainmentRecord | None, job_pid: int | None) -> None:
    """The subreaper's best: the shepherd's own session (or, if it led none, the job's process
    group within it), until none of their processes is left (they may fork meanwhile). A process
    group or session cannot be renamed while it has members, so those found are the attempt's."""
    if record is None:
        return
    shepherd, session = record["shepherd"], record["session"]
    if session <= 1 or session == os.getsid(0):
        return
    own_session = session == shepherd
    deadline = time.monotonic() + KILL_DEADLINE_S
    while time.monotonic() < deadline:
        victims = [pid for pid, pgid, sid in _processes()
                   if sid == session and (own_session or pgid == job_pid)]
        if not victims:
            return
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.01)
    log.warning("processes of a lost shepherd's session %s outlived %.0fs of SIGKILLs", session, KILL_DEADLINE_S)


def _processes() -> list[tuple[int, int, int]]:
    """(pid, process group, session) of every live process."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as file:
                data = file.read()
        except OSError:
            continue
        fields = data[data.rindex(b")") + 2 :].split()  # from field 3 (the state) on
        if fields[0] not in (b"Z", b"X"):
            found.append((int(name), int(fields[2]), int(fields[3])))
    return found
