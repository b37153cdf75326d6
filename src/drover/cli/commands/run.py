"""drover run -- COMMAND: run a command as a job and stream its output here (like srun).

Its stdout and stderr are followed as the job writes them; the exit status is the job's;
Ctrl-C cancels the job (SIGTERM, a grace period, then SIGKILL) before returning; Ctrl-C before
it starts cancels it where it waits ("Job allocation N has been revoked") and exits 130. On stderr
it says when the job waits and why, and where it started (cli/start_notice.py); -Q not."""

from __future__ import annotations

import sys

from drover.cli.commands.submit import build_parser, jobs_from_arguments
from drover.core.errors import BadRequest


def run(command: str, argv: list[str]) -> int:
    split = argv.index("--") if "--" in argv else len(argv)
    options, command_argv = argv[:split], argv[split + 1 :]
    if split == len(argv) and not {"-h", "--help"} & set(options):
        raise BadRequest("give the command after --, e.g. drover run --cpus 2 -- make -j2")
    parser = build_parser(command)
    parser.prog = "drover run"
    parser.add_argument("-Q", "--quiet", action="store_true",
                        help="say nothing of the job waiting or starting (its output and errors still come)")
    args = parser.parse_args(options)  # --help: run's own, exit 0
    if not command_argv:
        raise BadRequest("give the command after --")
    named_files = bool(args.output or args.error) and not args.pty  # kept where the user said, and streamed
    if args.pty:
        args.output = args.error = None
    (job,) = jobs_from_arguments(args, command_argv)

    from drover.cli import attached
    from drover.cli.cluster import ensure_running
    from drover.cli.common import client
    from drover.cli.start_notice import DROVER

    notice = None if args.quiet else DROVER
    ensure_running()
    with client(timeout_s=None) as api:
        if args.pty:
            reply = attached.on_terminal(api, job, notice=notice)
        else:
            reply = attached.stream(api, job, "run", named_files=named_files, notice=notice,
                                    on_revoke="drover run: Job allocation {id} has been revoked.")
    info = reply["job"]
    status = attached.exit_code(reply)
    if info["state"] != "completed" and not status:
        print(f"drover run: job {info['id']} {info['state']}", file=sys.stderr)
        return 1
    return int(status or 0)
