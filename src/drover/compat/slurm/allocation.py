"""An allocation made by srun or salloc outside a job: a Drover job whose output is streamed
here as it is written, whose exit status becomes the command's, and which Ctrl-C cancels (as
srun's does: the job step is killed, the allocation given up)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from typing import IO

from drover.cli.output_files import copy_new_bytes
from drover.protocol.api import JobInfo
from drover.protocol.plain import JobRequest


def stream_job(command: str, job: JobRequest, quiet: bool = False,
               announce: str | None = None, farewell: str | None = None) -> int:
    """Submit `job`, copy its stdout and stderr here until it ends, and return its exit status:
    the exit code, 128 + the signal that killed it, or 1 if it never ran or was cancelled.
    `announce` (salloc's "Granted job allocation {id}") is printed to stderr once it starts,
    `farewell` ("Relinquishing job allocation {id}") once it has ended."""
    from drover.cli.cluster import ensure_running
    from drover.client.client import Client

    spool = tempfile.mkdtemp(prefix=f"drover-{command}-")
    os.chmod(spool, 0o755)  # the job may run as its owner under a root-run node daemon
    output, error = job["output"], job["error"] = os.path.join(spool, "out"), os.path.join(spool, "err")
    streams: list[tuple[str, IO[bytes]]] = [(output, sys.stdout.buffer), (error, sys.stderr.buffer)]
    offsets = [0, 0]
    ensure_running()
    try:
        with Client(timeout_s=None) as client:
            (job_id,) = client.submit([job])
            announced = False
            try:
                while True:
                    info = client.wait(job_id, timeout_s=0)
                    if announce and not announced and (info is not None or _started(client.job(job_id))):
                        print(announce.format(id=job_id), file=sys.stderr, flush=True)
                        announced = True
                    for n, (path, out) in enumerate(streams):
                        offsets[n] = copy_new_bytes(path, offsets[n], out)
                    if info is not None:
                        break
                    time.sleep(0.05)
            except KeyboardInterrupt:
                if not quiet:
                    print(f"{command}: interrupt (one more within 1 sec to abort)" if command == "srun"
                          else f"{command}: Job allocation {job_id} has been revoked.", file=sys.stderr)
                client.cancel([str(job_id)])
                info = client.wait(job_id)
                for n, (path, out) in enumerate(streams):
                    copy_new_bytes(path, offsets[n], out)
    finally:
        shutil.rmtree(spool, ignore_errors=True)
    assert info is not None
    status = exit_status(command, info)
    if farewell:
        print(farewell.format(id=job_id), file=sys.stderr)
    return status


def _started(info: JobInfo) -> bool:
    return any(task.state not in ("pending", "held") for task in info.tasks)


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


def on_terminal(command: str, job: JobRequest, announce: str | None = None) -> JobInfo:
    """Run `job` on a terminal of its own, relayed to this one (as `drover run --pty`), and
    return it once it has ended."""
    from drover.cli.cluster import ensure_running
    from drover.cli.terminal import relay
    from drover.client.client import Client

    job["pty"], job["output"] = True, "/dev/null"
    job.pop("error", None)
    ensure_running()
    with Client(timeout_s=None) as client:
        (job_id,) = client.submit([job])
        path = None
        while path is None:
            info = client.job(job_id)
            attempts = [attempt for task in info.tasks for attempt in task.attempts]
            path = attempts[-1].pty_socket if attempts else None
            if path is None:
                if client.wait(job_id, timeout_s=0) is not None:
                    break
                time.sleep(0.02)
        if path is not None:
            if announce:
                print(announce.format(id=job_id), file=sys.stderr, flush=True)
            try:
                relay(path)
            except KeyboardInterrupt:
                client.cancel([str(job_id)])
        ended = client.wait(job_id)
    assert ended is not None
    return ended
