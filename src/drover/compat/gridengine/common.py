"""What the Grid Engine front ends share: messages, strictness, the client, states and times."""

from __future__ import annotations

import os
import pwd
import socket
import sys
import time
from collections.abc import Callable

from drover.core.errors import BadRequest, DroverError, Unreachable
from drover.core.suspension import ge_letters, parse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import JobInfo, TaskInfo

# Drover's task states as qstat's state column spells them (sge_qstat(5)); a task held in error
# after exit 100 is Eqw.
QSTAT_STATES = {"pending": "qw", "held": "hqw", "dispatched": "t", "running": "r", "suspended": "s",
                "completing": "r"}


# The port Grid Engine's commands name when no qmaster answers (SGE_QMASTER_PORT, else 6444).
QMASTER_PORT = "6444"


def no_qmaster() -> str:
    """What a Grid Engine command says first when its qmaster does not answer (commlib), and the
    reason its request failed, in its words."""
    port = os.environ.get("SGE_QMASTER_PORT") or QMASTER_PORT
    return ("error: commlib error: got select error (Connection refused)\n"
            f'unable to send message to qmaster using port {port} on host "{socket.gethostname()}": got send error')


def failed(command: str, error: DroverError) -> int:
    """Print a command's error as `COMMAND: message` and give its exit status; a cluster that
    does not answer is said as Grid Engine says an unreachable qmaster (exit 1)."""
    if isinstance(error, Unreachable):
        first, reason = no_qmaster().split("\n")
        print(f"{first}\nerror: {reason}", file=sys.stderr)
        return 1
    print(f"{command}: {error}", file=sys.stderr)
    return error.exit_code


def warn(command: str, message: str) -> None:
    print(f"{command}: warning: {message}", file=sys.stderr)


def is_strict(flag: bool = False) -> bool:
    return flag or os.environ.get("DROVER_COMPAT_STRICT") == "1"


def approximator(command: str, strict: bool) -> Callable[[str], None]:
    """What an approximated option does: a warning on stderr, or under -strict a refusal."""
    def approximate(message: str) -> None:
        if strict:
            raise BadRequest(f"{message} (refused under -strict)")
        warn(command, message)
    return approximate


def user_name() -> str:
    return pwd.getpwuid(os.getuid()).pw_name


def host_name() -> str:
    return socket.gethostname().split(".")[0]


def task_state(task: TaskInfo) -> str | None:
    """qstat's state of a task that has not ended; None for one that has. A suspended job is `s`
    when suspended on its own, `S` when its queue instance is, `sS` when both are."""
    if task.state == "held" and task.exit_status == 100:
        return "Eqw"
    if task.state in ("running", "suspended") and task.suspended_by:
        return ge_letters(parse(",".join(task.suspended_by)))
    return QSTAT_STATES.get(task.state)


def fresh_state(job: JobInfo) -> str | None:
    """The state of the tasks that have no record yet (never dispatched): qw or hqw."""
    recorded = {state: sum(1 for t in job.tasks if t.state == state) for state in ("pending", "held")}
    if job.task_counts.get("held", 0) > recorded["held"]:
        return "hqw"
    if job.task_counts.get("pending", 0) > recorded["pending"]:
        return "qw"
    return None


def when(stamp: float) -> str:
    """qstat's date: 11/24/2026 09:05:03."""
    return time.strftime("%m/%d/%Y %H:%M:%S", time.localtime(stamp))


def ctime(stamp: float) -> str:
    """qacct's and qstat -j's date, as ctime(3) writes it: `Tue Nov  3 09:05:03 2026`."""
    return time.ctime(stamp)


def queue_name(job: JobInfo) -> str:
    """Drover's default queue under Grid Engine's name for it."""
    return "all.q" if job.queue == "default" else job.queue


def arch() -> str:
    """Grid Engine's name for this machine's architecture: lx-amd64 and the like."""
    from drover.spool.architecture import architecture

    return architecture()
