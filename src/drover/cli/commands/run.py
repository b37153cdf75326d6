"""drover run -- COMMAND: run a command as a job and stream its output here (like srun).

Its stdout and stderr are followed as the job writes them; the exit status is the job's;
Ctrl-C cancels the job (SIGTERM, a grace period, then SIGKILL) before returning."""

from __future__ import annotations

import os
import sys
import tempfile
import time

from drover.cli.commands.submit import build_parser, jobs_from_arguments
from drover.cli.output_files import copy_new_bytes
from drover.core.errors import BadRequest

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass


def run(command: str, argv: list[str]) -> int:
    if "--" not in argv:
        raise BadRequest("give the command after --, e.g. drover run --cpus 2 -- make -j2")
    split = argv.index("--")
    options, command_argv = argv[:split], argv[split + 1 :]
    if not command_argv:
        raise BadRequest("give the command after --")
    parser = build_parser(command)
    parser.prog = "drover run"
    args = parser.parse_args(options)
    if args.pty:
        return _run_on_terminal(args, command_argv)
    spool = tempfile.mkdtemp(prefix="drover-run-")
    output = args.output = args.output or os.path.join(spool, "out")
    error = args.error = args.error or os.path.join(spool, "err")
    (job,) = jobs_from_arguments(args, command_argv)

    from drover.cli.cluster import ensure_running
    from drover.cli.common import client

    ensure_running()
    with client(timeout_s=None) as api:
        (job_id,) = api.submit([job])
        print(f"drover run: job {job_id}", file=sys.stderr, flush=True)
        streams = [(output, sys.stdout.buffer), (error, sys.stderr.buffer)]
        offsets = [0, 0]
        try:
            while True:
                reply = api.wait_json(job_id, 0)
                for n, (path, out) in enumerate(streams):
                    offsets[n] = copy_new_bytes(path, offsets[n], out)
                if reply["ended"]:
                    break
                time.sleep(0.05)
        except KeyboardInterrupt:
            api.action_json("cancel", [str(job_id)])
            reply = api.wait_json(job_id, 60)
            for n, (path, out) in enumerate(streams):
                copy_new_bytes(path, offsets[n], out)
        finally:
            import shutil

            shutil.rmtree(spool, ignore_errors=True)
    info = reply["job"]
    status = info["exit_status"]
    if info["state"] != "completed" and not status:
        print(f"drover run: job {job_id} {info['state']}", file=sys.stderr)
        return 1
    return int(status or 0)


def _run_on_terminal(args: object, command_argv: list[str]) -> int:
    """Like qrsh or srun --pty: the job runs on a terminal of its own, relayed to this one; its
    exit status is returned."""
    from drover.cli.cluster import ensure_running
    from drover.cli.common import client
    from drover.cli.terminal import relay

    args.output = args.error = None  # type: ignore[attr-defined]  # argparse's Namespace, passed as object
    (job,) = jobs_from_arguments(args, command_argv)
    job["pty"] = True
    job["output"] = "/dev/null"
    ensure_running()
    with client(timeout_s=None) as api:
        (job_id,) = api.submit([job])
        path = None
        while path is None:
            reply = api.wait_json(job_id, 0)
            if reply["ended"]:
                break
            attempts = [a for t in reply["job"]["tasks"] for a in t["attempts"]]
            path = attempts[-1].get("pty_socket") if attempts else None
            if path is None:
                time.sleep(0.02)
        if path is not None:
            try:
                relay(path)
            except KeyboardInterrupt:
                api.action_json("cancel", [str(job_id)])
        while not (reply := api.wait_json(job_id, 30))["ended"]:
            pass
    info = reply["job"]
    if info["state"] != "completed" and not info["exit_status"]:
        print(f"drover run: job {job_id} {info['state']}", file=sys.stderr)
        return 1
    return int(info["exit_status"] or 0)
