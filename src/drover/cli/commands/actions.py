"""drover cancel / hold / release JOB...: a whole job (12) or one task (12.3)."""

from __future__ import annotations

import sys

from drover.cli.common import client, parser, print_json

_DESCRIPTIONS = {
    "cancel": "Cancel jobs or tasks. Pending ones end at once; running ones get SIGTERM, a grace "
              "period, then SIGKILL.",
    "hold": "Keep pending jobs or tasks from starting until released.",
    "release": "Let held jobs or tasks start.",
}


def run(command: str, argv: list[str]) -> int:
    p = parser(command, _DESCRIPTIONS[command])
    p.add_argument("refs", nargs="+", metavar="JOB", help="a job id (12) or a task (12.3)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    args = p.parse_args(argv)
    from drover.core.ids import parse_job_ref

    for ref in args.refs:
        parse_job_ref(ref)  # a malformed id is refused before anything is sent
    with client() as api:
        results = api.action_json(command, args.refs)
    failed = [result for result in results if not result["ok"]]
    if args.json:
        print_json(results)
    else:
        for result in results:
            if result["ok"] and not args.quiet:
                print(f"{result['ref']}: {result['message']}")
            elif not result["ok"]:
                print(f"drover {command}: {result['message']}", file=sys.stderr)
    return 1 if failed else 0
