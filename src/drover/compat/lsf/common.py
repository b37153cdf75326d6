"""What the LSF front ends share: job ids in LSF's form (`12`, an array element `12[3]`), states
and exit codes as LSF reports them, queue names, times as its commands print them, how a
command says an error, and the way every command starts (`run`)."""

from __future__ import annotations

import os
import re
import socket
import sys
import time
from collections.abc import Sequence

from drover.compat.client_body import Act, Body, Check, through_client
from drover.compat.lsf.syntax import LsfUsageError, parse, print_error
from drover.core.errors import DroverError, Unreachable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.compat.optiontable import Option
    from drover.protocol.api import AttemptInfo, JobInfo, TaskInfo

DEFAULT_QUEUE = "normal"  # LSF's default queue (lsb.queues): Drover's "default"
EXIT_FAILURE = 255  # what LSF's commands exit with when a request fails

# Drover's task states as LSF's job states (bjobs(1)): PEND waits, PSUSP is held while pending,
# RUN runs, USUSP is suspended by its user, SSUSP by the system (its queue instance), DONE exited
# 0, EXIT ended otherwise.
_STATES = {"pending": "PEND", "held": "PSUSP", "dispatched": "RUN", "running": "RUN", "completing": "RUN",
           "suspended": "USUSP", "completed": "DONE"}
FINISHED = ("DONE", "EXIT")


def queue_name(queue: str) -> str:
    return DEFAULT_QUEUE if queue == "default" else queue


def drover_queue(queue: str) -> str:
    return "default" if queue in ("", DEFAULT_QUEUE) else queue


def task_state(task: TaskInfo) -> str:
    if task.state in ("running", "suspended") and task.suspended_by:
        return "USUSP" if "job" in task.suspended_by else "SSUSP"
    return _STATES.get(task.state, "EXIT")


def state_of(state: str) -> str:
    """A state word of Drover's (a job's as the listing gives it) as LSF's."""
    return _STATES.get(state, "EXIT")


def job_id(number: int, index: int | None = None) -> str:
    return str(number) if index is None else f"{number}[{index}]"


_REF = re.compile(r"([0-9]+)(?:\[([0-9]+)\])?")


def parse_ref(text: str) -> tuple[int, int | None] | None:
    """A job id as LSF's commands take it (`12`, `12[3]`) → the job and the element's index
    (None for the whole job); None for what is no job id."""
    match = _REF.fullmatch(text.strip())
    if match is None or len(match.group(1)) > 18 or len(match.group(2) or "") > 9:
        return None  # no job's: Drover's ids are 63-bit, its array indices 31-bit
    return int(match.group(1)), int(match.group(2)) if match.group(2) else None


def drover_ref(job: int, index: int | None) -> str:
    return str(job) if index is None else f"{job}.{index}"


def elements(job: JobInfo) -> list[TaskInfo]:
    """Each element of an array, in index order (those never dispatched as they wait), or the
    job's one task."""
    from drover.compat.pbs.common import subjobs

    return subjobs(job)


def last_attempt(task: TaskInfo) -> AttemptInfo | None:
    return task.attempts[-1] if task.attempts else None


def exit_code(task: TaskInfo) -> int | None:
    """LSF's exit code of a finished job (bjobs -o exit_code): the top process's exit code, or
    128 + the signal that killed it, as the job's shell reports it; None while it has not ended
    or when it never ran."""
    if task.exit_status is not None:
        return task.exit_status
    attempt = last_attempt(task)
    if attempt is None or attempt.started_at is None:
        return None
    if attempt.signal:
        return 128 + attempt.signal
    return attempt.exit_code


def lsf_time(stamp: float | None) -> str:
    """bjobs's SUBMIT_TIME: `Nov 28 04:56`."""
    if stamp is None:
        return "-"
    return time.strftime("%b %e %H:%M", time.localtime(stamp))


def long_time(stamp: float) -> str:
    """bjobs -l's and bhist -l's dates: `Sat Nov 28 04:56:07`."""
    return time.strftime("%a %b %e %H:%M:%S", time.localtime(stamp))


def failed(command: str, error: DroverError) -> int:
    """An error of the cluster as LSF's commands say theirs; a cluster that does not answer as
    they say an unreachable master (`LSF is down. Please wait ...`)."""
    if isinstance(error, Unreachable):
        print("batch system daemon not responding ... still trying", file=sys.stderr)
        print(f"{command}: LSF is down. Please wait ...", file=sys.stderr)
        return EXIT_FAILURE
    print(f"{command}: {error}", file=sys.stderr)
    return EXIT_FAILURE


def warn(command: str, message: str) -> None:
    print(f"{command}: warning: {message}", file=sys.stderr)


def is_strict() -> bool:
    return os.environ.get("DROVER_COMPAT_STRICT") == "1"


def user_name() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def host_name() -> str:
    return socket.gethostname().split(".")[0]


def version() -> str:
    from drover import __version__

    return __version__


def run(command: str, argv: list[str] | None, options: Sequence[Option], usage: str, act: Act,
        check: Check | None = None, timeout: bool = True) -> int:
    """What each LSF command does first: parse its command line (`argv`, default the process's),
    print the usage on -h or the version on -V, check the rest, then act through a client of
    the cluster (without a timeout when `timeout` is false: bpeek -f follows a job). A bad
    command line exits as LSF's commands do (its message, the usage, 255), an error of the
    cluster as `failed` says it."""
    return start(command, argv, options, usage, through_client(act, check, timeout))


def start(command: str, argv: list[str] | None, options: Sequence[Option], usage: str, body: Body,
          permute: bool = True) -> int:
    """`run` for a command that opens its client itself: `body` once -h and -V are answered.
    `permute`: whether options may follow operands (bsub's end at its command's first word)."""
    try:
        given, operands = parse(command, list(sys.argv[1:] if argv is None else argv), options, permute=permute)
        keys = {g.key for g in given}
        if "h" in keys:
            print(usage, file=sys.stderr)
            return 0
        if "V" in keys:
            print(f"IBM Spectrum LSF 10.1 commands of Drover {version()}", file=sys.stderr)
            return 0
        return body(given, operands)
    except LsfUsageError as error:
        return print_error(error, usage)
    except DroverError as error:
        return failed(command, error)
