"""An allocation made by srun or salloc outside a job: a Drover job whose output is streamed
here as it is written, whose exit status becomes the command's, and which Ctrl-C cancels (as
srun's does: the job step is killed, the allocation given up; before it starts, the waiting job
is cancelled: "Job allocation NNN has been revoked")."""

from __future__ import annotations

import sys

import msgspec

from drover.protocol.api import JobInfo
from drover.protocol.plain import JobRequest


def stream_job(command: str, job: JobRequest, quiet: bool = False,
               announce: str | None = None, farewell: str | None = None) -> int:
    """Submit `job`, copy its stdout and stderr here until it ends, and return its exit status:
    the exit code, 128 + the signal that killed it, or 1 if it never ran or was cancelled.
    `announce` (salloc's "Granted job allocation {id}") is printed to stderr once it starts,
    `farewell` ("Relinquishing job allocation {id}") once it has ended. Unless `quiet`, it says
    as srun does when the job waits for resources, and when it has them (cli/start_notice.py)."""
    from drover.cli import attached
    from drover.cli.start_notice import slurm
    from drover.client.client import Client

    interrupted = None if quiet else ("srun: interrupt (one more within 1 sec to abort)" if command == "srun"
                                      else f"{command}: Job allocation {{id}} has been revoked.")
    with Client(timeout_s=None) as client:
        try:
            reply = attached.stream(client, job, command, on_start=announce, on_interrupt=interrupted,
                                    notice=None if quiet else slurm(command))
        except attached.Revoked as revoked:  # Ctrl-C before it started: cancelled, said so
            reply = revoked.reply
    info = msgspec.convert(reply["job"], JobInfo)
    status = exit_status(command, info)
    if farewell:
        print(farewell.format(id=info.id), file=sys.stderr)
    return status


def exit_status(command: str, info: JobInfo) -> int:
    attempt = info.tasks[0].attempts[-1] if info.tasks and info.tasks[0].attempts else None
    if attempt is not None and attempt.signal is None and attempt.exit_code is not None and not attempt.failure:
        return attempt.exit_code
    state = info.tasks[0].state.upper() if info.tasks else info.state.upper()
    print(f"{command}: error: job {info.id} ended {state}" +
          (f": {attempt.failure}" if attempt is not None and attempt.failure else ""), file=sys.stderr)
    if attempt is not None and attempt.signal is not None:
        return 128 + attempt.signal
    return 1


def on_terminal(command: str, job: JobRequest, announce: str | None = None, quiet: bool = False) -> JobInfo:
    """Run `job` on a terminal of its own, relayed to this one (as `drover run --pty`), and
    return it once it has ended; what it says while the job waits as stream_job's."""
    from drover.cli import attached
    from drover.cli.start_notice import slurm
    from drover.client.client import Client

    with Client(timeout_s=None) as client:
        try:
            reply = attached.on_terminal(client, job, on_start=announce, notice=None if quiet else slurm(command),
                                         on_revoke=f"{command}: Job allocation {{id}} has been revoked.")
        except attached.Revoked as revoked:  # Ctrl-C before it started: cancelled, said so
            reply = revoked.reply
    return msgspec.convert(reply["job"], JobInfo)
