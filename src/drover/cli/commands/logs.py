"""drover logs JOB [-f]: print a job's output file, optionally following it until the job ends."""

from __future__ import annotations

import os
import sys
import time

from drover.cli.common import client, parser
from drover.cli.output_files import TaskOutput
from drover.core.errors import BadRequest, Forbidden, NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Print a job's output (stdout, or --stderr). -f follows it until the job ends.", json_flag=False)
    p.add_argument("ref", metavar="JOB", help="a job (12) or one task of an array (12.3)")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing as the job writes, until it ends")
    p.add_argument("--stderr", action="store_true", help="the error file instead (when it is separate)")
    args = p.parse_args(argv)
    from drover.core.ids import parse_job_ref

    job_id, index = parse_job_ref(args.ref)
    with client(timeout_s=None) as api:
        job = api.job(job_id)
        if job.array and index is None:
            raise BadRequest(f"job {job_id} is an array; name one task, e.g. {job_id}.{job.array.split('-')[0].split(',')[0]}")
        index = index if index is not None else 0
        task = next((t for t in job.tasks if t.index == index), None)
        if task is None:
            raise NotFound(f"task {job_id}.{index} has not started yet, so it has no output")
        path = task.stderr if args.stderr else task.stdout
        if path is None:
            raise BadRequest(f"job {job_id} joins stderr into {task.stdout}")
        newest = task.attempts[-1] if task.attempts else None
        if api.remote or (newest is not None and newest.node not in {n.name for n in api.nodes() if n.local}):
            return _through_node(api, job_id, index, "stderr" if args.stderr else "stdout", args.follow)
        from drover.core.job_state import FINAL_STATES

        ended = task.state in FINAL_STATES  # it writes no more: a file not there now never will be
        if not os.path.isabs(path) or (not os.path.exists(path) and (ended or job.state not in ("pending", "running"))):
            # Not visible from here (a scratch directory on the node): the controller keeps a copy.
            while args.follow and not api.wait_json(job_id, 30)["ended"]:
                pass
            attempt = max((a.number for a in task.attempts), default=0)
            data = api.staged_file(job_id, index, attempt, path)
            if data is None and ended:
                raise NotFound(f"task {job_id}.{index} has ended and its output file {path} is no longer there "
                               "(drover run keeps its own output files only until the job ends)")
            if data is None:
                raise NotFound(f"the output of task {job_id}.{index} stays on its node until the task ends")
            sys.stdout.buffer.write(data)
            return 0
        offset = _copy(path, 0, must_exist=not args.follow)
        while args.follow:
            reply = api.wait_json(job_id, 0.25 if os.path.exists(path) else 0.1)
            offset = _copy(path, offset, must_exist=False)
            if reply["ended"]:
                _copy(path, offset, must_exist=False)
                break
    return 0


def _through_node(api: Client, job_id: int, index: int, stream: str, follow: bool) -> int:
    """The task ran on another host: its file is read there, by its node, as its owner. Once
    the node no longer has it (it ran in a scratch directory), the controller's copy."""
    output = TaskOutput(api, job_id, index, stream, None)
    while True:
        output.copy_new(sys.stdout.buffer)
        if not follow:
            break
        if api.wait_json(job_id, 0.25)["ended"]:
            output.copy_new(sys.stdout.buffer)
            break
    if output.missing is not None and output.offset == 0:
        job = api.job(job_id)
        task = next(t for t in job.tasks if t.index == index)
        name = task.stderr if stream == "stderr" else task.stdout
        attempt = max((a.number for a in task.attempts), default=0)
        data = api.staged_file(job_id, index, attempt, name or "") if job.state not in ("pending", "running") else None
        if data is None:
            raise NotFound(output.missing)
        sys.stdout.buffer.write(data)
    return 0


def _copy(path: str, offset: int, must_exist: bool) -> int:
    try:
        with open(path, "rb") as file:
            file.seek(offset)
            while chunk := file.read(65536):
                sys.stdout.buffer.write(chunk)
                offset += len(chunk)
    except FileNotFoundError:
        if must_exist:
            raise NotFound(f"the output file {path} does not exist (yet)") from None
        time.sleep(0)
    except PermissionError:
        # Read with the rights of whoever runs the command: an operator's end at managing jobs.
        raise Forbidden(f"cannot read the output file {path}: permission denied "
                        "(`drover logs` reads it with your own rights)") from None
    sys.stdout.flush()
    return offset
