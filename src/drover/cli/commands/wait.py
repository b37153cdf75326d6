"""drover wait JOB...: block until the jobs end; exit with their exit status."""

from __future__ import annotations

import sys
import time

from drover.cli.common import client, job_ids, parser, seconds
from drover.core.errors import Unavailable, Unreachable

TIMED_OUT = 124  # as timeout(1)


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Wait for jobs to end. Exits 0 if all completed, else the first failure's "
                        f"exit status (at least 1); {TIMED_OUT} if --timeout passed first.")
    p.add_argument("jobs", nargs="+", metavar="JOB")
    p.add_argument("--timeout", type=seconds, metavar="S", help="give up after S seconds")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing; only the exit status tells")
    p.add_argument("--progress", action="store_true",
                   help="on a terminal, a progress bar of their tasks on stderr (done, running, pending, failed, "
                        "rate, ETA); elsewhere nothing more")
    args = p.parse_args(argv)
    ids = job_ids(args.jobs)
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    results = []
    with client(timeout_s=None) as api:
        if args.progress and sys.stderr.isatty():
            from drover.cli.progress import follow

            follow(api, ids, deadline)  # then the waits below answer at once
        for job_id in ids:
            while True:
                remaining = 60.0 if deadline is None else max(deadline - time.monotonic(), 0.0)
                try:
                    reply = api.wait_json(job_id, min(remaining, 60.0))
                except Unreachable:
                    raise
                except Unavailable:
                    # The controller answers but its store is restarting (or it hands over to a
                    # standby): the jobs go on, and so does the wait, within its timeout.
                    if deadline is not None and time.monotonic() >= deadline:
                        raise
                    time.sleep(1.0)
                    continue
                if reply["ended"]:
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    if not args.quiet:
                        print(f"drover wait: job {job_id} has not ended ({reply['job']['state']})", file=sys.stderr)
                    return TIMED_OUT
            results.append(reply["job"])
    status = 0
    for job in results:
        code = job["exit_status"] if job["exit_status"] is not None else 1
        if job["state"] != "completed" and code == 0:
            code = 1
        if args.json:
            continue
        if not args.quiet:
            print(f"job {job['id']} {job['state']}, exit status {code}")
        status = status or code
    if args.json:
        from drover.cli.common import print_json

        print_json(results)
        status = next((j["exit_status"] or 1 for j in results if j["state"] != "completed"), 0)
    return min(status, 255)
