"""drover task start HOST -- COMMAND: inside a running parallel job, run COMMAND on HOST, one of
the job's hosts, as a task of the job under a shepherd of its own (GE's tight integration,
`qrsh -inherit`); its stdout and stderr are printed here as it writes them, and the exit
status is the task's.

The job is the one the command runs in ($DROVER_JOB_ID, else Grid Engine's $JOB_ID; its task
$DROVER_TASK_ID). The task starts in the current directory with the current environment.

A SIGINT (Ctrl-C), SIGTERM or SIGHUP of the caller stops the task (as Grid Engine's qrsh forwards
its signals): the caller asks the controller to stop it, prints the rest of its output and exits
with its status; a second one exits at once."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

from drover.core.errors import BadRequest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client

USAGE = "usage: drover task start HOST -- COMMAND [ARGS...]"


def run(command: str, argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] != "start":
        raise BadRequest(f"unknown action {argv[0]!r}: {USAGE}")
    rest = argv[1:]
    if len(rest) < 3 or rest[1] != "--":
        raise BadRequest(USAGE)
    return start_and_wait(rest[0], rest[2:], "drover task")


def own_job() -> tuple[int, int]:
    """The job (and its task index) the caller runs in, from the environment its shepherd made."""
    text = os.environ.get("DROVER_JOB_ID") or os.environ.get("JOB_ID") or ""
    if not text.isdigit():
        raise BadRequest("not inside a job: neither DROVER_JOB_ID nor JOB_ID is set; a task is started "
                         "from inside a running parallel job")
    index = os.environ.get("DROVER_TASK_ID", "0")
    return int(text), int(index) if index.isdigit() else 0


def start_and_wait(host: str, argv: list[str], prog: str) -> int:
    from drover.cli.common import client

    job_id, index = own_job()
    with client(timeout_s=None) as api, _interrupts() as interrupted:
        started = api.start_pe_task(job_id, host, argv, task=index, cwd=os.getcwd(), env=dict(os.environ))
        return _follow(api, job_id, index, started.petask, prog, interrupted)


FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def _interrupts() -> Iterator[list[int]]:
    """The signals that came, in order: the first is taken as "stop the task" (`_follow`), a
    second exits at once (128 + it), as a shell's status for it says."""
    came: list[int] = []

    def handler(signum: int, frame: object) -> None:
        came.append(signum)
        if len(came) > 1:
            raise SystemExit(128 + signum)

    before = {signum: signal.signal(signum, handler) for signum in FORWARDED}
    try:
        yield came
    finally:
        for signum, previous in before.items():
            signal.signal(signum, previous)


def _follow(api: Client, job_id: int, index: int, petask: str, prog: str, interrupted: list[int]) -> int:
    """Print the task's output as it comes, until it ended and all of it is printed; stop it
    once the caller is interrupted."""
    from drover.cli.pe_task_relay import POLL_S, TaskRelay, next_delay

    relay = TaskRelay(job_id, index, petask, {"stdout": _writer(sys.stdout.buffer), "stderr": _writer(sys.stderr.buffer)})
    delay = POLL_S[0]
    stopped = False
    while True:
        if interrupted and not stopped:
            relay.stop(api)
            stopped = True
        info = relay.look(api)
        if info is not None:
            if info.failure:
                print(f"{prog}: task {petask} on {info.host}: {info.failure}", file=sys.stderr)
            return info.exit_status if info.exit_status is not None else 1
        time.sleep(delay)
        delay = next_delay(delay)


def _writer(out: BinaryIO) -> Callable[[bytes], None]:
    def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    return write
