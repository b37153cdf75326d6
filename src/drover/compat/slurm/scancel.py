"""scancel: cancel jobs (or array tasks, JOB_INDEX); -s sends a signal instead; -Q is quiet,
and then cancelling a job that already ended is not an error (as in Slurm)."""

from __future__ import annotations

import argparse
import sys

from drover.compat.slurm.common import fail
from drover.core.errors import DroverError


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="scancel")
    p.add_argument("jobs", nargs="*")
    p.add_argument("-Q", "--quiet", action="store_true")
    p.add_argument("-s", "--signal")
    p.add_argument("-u", "--user")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    refs = [job.replace("_", ".") for job in args.jobs]
    try:
        from drover.client.client import Client

        with Client() as client:
            if args.user and not refs:
                refs = [str(j["id"]) for j in client.transport.call("GET", f"/v1/jobs?user={args.user}")["jobs"]]
            if not refs:
                return fail("scancel", "No job identification provided")
            if args.signal and args.signal.upper().removeprefix("SIG") not in ("KILL", "TERM"):
                results = client.action_json("signal", refs, args.signal)
            else:
                results = client.action_json("cancel", refs)
    except DroverError as error:
        return fail("scancel", str(error))
    status = 0
    for result in results:
        if result["ok"]:
            continue
        ended = "has already ended" in result["message"] or "nothing left to cancel" in result["message"]
        if args.quiet and ended:
            continue
        if not args.quiet:
            print(f"scancel: error: Kill job error on job id {result['ref'].replace('.', '_')}: {result['message']}",
                  file=sys.stderr)
        status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
