"""drover events [JOB]: the event log."""

from __future__ import annotations

import json

from drover.cli.common import client, job_ids, parser, print_json


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Print the event log of a job, or of the whole cluster.")
    p.add_argument("job", nargs="?", metavar="JOB")
    p.add_argument("--limit", type=int, default=1000)
    args = p.parse_args(argv)
    job_id = job_ids([args.job])[0] if args.job else None
    with client() as api:
        events = api.events(job_id, limit=args.limit)
    if args.json:
        print_json(events)
        return 0
    from drover.cli.render import when

    for event in events:
        where = ""
        if event.job_id is not None:
            where = str(event.job_id) + (f".{event.index}" if event.index is not None else "")
            where += f" #{event.attempt}" if event.attempt else ""
        detail = " ".join(f"{k}={json.dumps(v)}" for k, v in event.detail.items() if v is not None)
        print(f"{when(event.time)} {event.kind:<17} {where:<12} {detail}")
    return 0
