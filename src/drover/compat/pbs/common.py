"""What the PBS front ends share: the server's name and job ids in PBS's form, states and exit
statuses as PBS reports them, how a command says an error, and the way every command starts
(`run`)."""

from __future__ import annotations

import os
import re
import signal
import socket
import sys
import time
from collections.abc import Sequence

from drover.compat.client_body import Act, Body, Check, through_client
from drover.compat.pbs.syntax import PbsUsageError, last, parse, print_error
from drover.core.errors import DroverError, Unreachable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.compat.optiontable import Option
    from drover.protocol.api import AttemptInfo, JobInfo, TaskInfo

# PBS's error numbers (pbs_error.h); a command exits with the last one, modulo 256.
PBSE_UNKJOBID = 15001  # "Unknown Job Id"
PBSE_PERM = 15007  # "Unauthorized Request"
PBSE_BADSTATE = 15016  # "Request invalid for state of job"
PBSE_UNKSIG = 15013  # "Unknown signal name"
PBSE_UNKQUE = 15018  # "Unknown queue"
PBSE_SYSTEM = 15010  # "System error": what a client says when it cannot reach its server
PBSE_HISTJOBID = 15139  # "Job has finished, use -x or -H to obtain historical job information"
EXIT_UNKNOWN_JOB = PBSE_UNKJOBID % 256  # 153
EXIT_FINISHED = PBSE_HISTJOBID % 256  # 35
EXIT_NO_SERVER = 255

DEFAULT_QUEUE = "workq"  # PBS Pro's default queue: Drover's "default"

# PBS Pro's Exit_status for a job PBS itself could not start (JOB_EXEC_FAIL1), and the base a
# signal that killed the job's top process is added to (PBS Pro reports 256 + signal).
JOB_EXEC_FAIL1 = -1
SIGNAL_BASE = 256


def server_name() -> str:
    """The name job ids end with (`12.server`): $PBS_SERVER, as PBS's commands take it, else the
    host's short name: Drover's cluster answers from here."""
    return os.environ.get("PBS_SERVER") or socket.gethostname().split(".")[0]


def job_id(number: int, is_array: bool = False, task: int | None = None) -> str:
    """`12.server`; an array `12[].server`; its subjob `12[3].server`."""
    if task is not None:
        return f"{number}[{task}].{server_name()}"
    return f"{number}[].{server_name()}" if is_array else f"{number}.{server_name()}"


def id_of(job: JobInfo) -> str:
    return job_id(job.id, job.array is not None)


_REF = re.compile(r"([0-9]+)(?:\[([0-9]*)\])?(?:\.[A-Za-z0-9_.-]*)?")


def parse_ref(text: str) -> tuple[int, int | None] | None:
    """A job id as PBS's commands take it (`12`, `12.server`, `12[]`, `12[3].server`) → the job
    and the subjob's index (None for the whole job); None for what is no job id."""
    match = _REF.fullmatch(text.strip())
    if match is None:
        return None
    index = match.group(2)
    return int(match.group(1)), int(index) if index else None


def drover_ref(job: int, task: int | None) -> str:
    return str(job) if task is None else f"{job}.{task}"


def unknown_job(command: str, text: str) -> str:
    return f"{command}: Unknown Job Id {text}"


def failed(command: str, error: DroverError) -> int:
    """An error of the cluster, as `COMMAND: message`; a cluster that does not answer as PBS
    Pro's commands say an unreachable server (`Connection refused`, then `cannot connect to
    server NAME (errno=15010)`, PBSE_SYSTEM), exit status 255 as qstat's."""
    if isinstance(error, Unreachable):
        print(f"Connection refused\n{command}: cannot connect to server {server_name()} (errno={PBSE_SYSTEM})",
              file=sys.stderr)
        return EXIT_NO_SERVER
    print(f"{command}: {error}", file=sys.stderr)
    return error.exit_code


def warn(command: str, message: str) -> None:
    print(f"{command}: warning: {message}", file=sys.stderr)


def is_strict() -> bool:
    return os.environ.get("DROVER_COMPAT_STRICT") == "1"


def queue_name(queue: str) -> str:
    return DEFAULT_QUEUE if queue == "default" else queue


def drover_queue(queue: str) -> str:
    """-q's `queue[@server]` as Drover names it (workq is Drover's default queue)."""
    name = queue.partition("@")[0]
    return "default" if name in ("", DEFAULT_QUEUE) else name


# Drover's task states as PBS's job_state letters (qstat(1B)): Q queued, H held, R running, S
# suspended, E exiting, F finished (qstat -x).
_STATES = {"pending": "Q", "held": "H", "dispatched": "R", "running": "R", "suspended": "S", "completing": "E"}


def task_state(state: str) -> str:
    return _STATES.get(state, "F")


def job_state(job: JobInfo) -> str:
    """A job's letter; an array is B (begun) once any subjob has started, else Q or H, and F when
    every subjob has finished."""
    counts = job.task_counts
    if job.array is None:
        return task_state(job.state)
    if all(task_state(state) == "F" for state, n in counts.items() if n):
        return "F"
    if any(task_state(state) in ("R", "S", "E", "F") for state, n in counts.items() if n):
        return "B"
    return "H" if counts.get("held") and not counts.get("pending") else "Q"


def subjobs(job: JobInfo) -> list[TaskInfo]:
    """Every subjob of an array, in index order: those with a record as the cluster has them, the
    others (never dispatched yet) queued, or held where the array's held count says so."""
    from drover.core.arrays import TaskIndices
    from drover.core.units import parse_array
    from drover.protocol.api import TaskInfo

    if job.array is None:
        return list(job.tasks)
    recorded = {task.index: task for task in job.tasks}
    held = job.task_counts.get("held", 0) - sum(1 for task in job.tasks if task.state == "held")
    out = []
    for index in TaskIndices(parse_array(job.array)[0]):
        task = recorded.get(index)
        if task is None:
            task = TaskInfo(index=index, state="held" if held > 0 else "pending", state_since=job.submitted_at)
            held -= 1
        out.append(task)
    return out


def subjob_state(task: TaskInfo) -> str:
    """A subjob's letter: X once it has finished (qstat -t), as PBS Pro marks expired subjobs."""
    letter = task_state(task.state)
    return "X" if letter == "F" else letter


def exit_status(task: TaskInfo) -> int | None:
    """PBS Pro's Exit_status of a finished job: the top process's exit code; 256 + the signal
    that killed it (a job killed at its walltime gets SIGTERM: 271; one qdel deleted while it
    ran, SIGKILL: 265, as PBS Pro reports a deleted job); -1 (JOB_EXEC_FAIL1) when it never
    started; None when it never ran (deleted while queued)."""
    attempt = task.attempts[-1] if task.attempts else None
    if attempt is None:
        return None
    if task.state == "cancelled" and attempt.started_at is not None:
        return SIGNAL_BASE + signal.SIGKILL
    return attempt_exit_status(attempt)


def attempt_exit_status(attempt: AttemptInfo) -> int | None:
    if attempt.timed_out:  # PBS's MoM ends it with SIGTERM (then SIGKILL, were it still there)
        return SIGNAL_BASE + signal.SIGTERM
    if attempt.signal:
        return SIGNAL_BASE + attempt.signal
    if attempt.exit_code is not None:
        return attempt.exit_code
    if attempt.failure:
        return JOB_EXEC_FAIL1
    return None


def ctime(stamp: float) -> str:
    """qstat -f's dates, as ctime(3) writes them: `Tue Nov  3 09:05:03 2026`."""
    return time.ctime(stamp)


def user_name() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def host_name() -> str:
    return socket.gethostname()


def version() -> str:
    from drover import __version__

    return __version__


def run(command: str, argv: list[str] | None, options: Sequence[Option], usage: str, act: Act,
        check: Check | None = None) -> int:
    """What each PBS command does first: parse its command line (`argv`, default the process's),
    check it, print the version on --version (where the command has it), then act through a
    client of the cluster. A bad command line exits as PBS's commands do (getopt's words or the
    check's, then `usage` where the error asks for it; 2 unless the error says otherwise), an
    error of the cluster as `failed` says it."""
    return start(command, argv, options, usage, through_client(act), check)


def start(command: str, argv: list[str] | None, options: Sequence[Option], usage: str, body: Body,
          check: Check | None = None, permute: bool = True) -> int:
    """`run` for a command that opens its client itself: `body` once the command line is checked
    and --version answered. `permute`: whether options may follow operands (qsub's end at its
    script or its command)."""
    try:
        given, operands = parse(command, list(sys.argv[1:] if argv is None else argv), options, permute=permute)
        if check is not None:
            check(given, operands)
        if last(given, "version") is not None:
            print(f"pbs_version = {version()}")
            return 0
        return body(given, operands)
    except PbsUsageError as error:
        return print_error(error, usage)
    except DroverError as error:
        return failed(command, error)
