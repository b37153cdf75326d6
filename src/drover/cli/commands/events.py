"""drover events [JOB]: the event log."""

from __future__ import annotations

import json

from drover.cli.common import client, job_ids, parser, print_json, whole_number

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Print the event log of a job, or of the whole cluster.")
    p.add_argument("job", nargs="?", metavar="JOB")
    p.add_argument("--limit", type=whole_number(1), default=1000, help="at most this many events (default 1000)")
    p.add_argument("--after", type=whole_number(0), default=0, metavar="SEQ",
                   help="only events after this sequence number (the next page: the last one shown)")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new events (until the job ends)")
    args = p.parse_args(argv)
    job_id = job_ids([args.job])[0] if args.job else None
    after, first = args.after, True
    with client() as api:
        while True:
            events = api.events(job_id, after=after, limit=args.limit, wait_s=0 if first else 30)
            first = False
            if args.json and not args.follow:
                print_json(events)
                return 0
            for event in events:
                _print(event, args.json)
                after = event.seq
                if args.follow and job_id is not None and event.kind == "job_ended":
                    return 0
            if not args.follow:
                return 0


def _print(event: Any, as_json: bool) -> None:
    if as_json:
        import msgspec

        print(json.dumps(msgspec.to_builtins(event)), flush=True)
        return
    from drover.cli.render import when

    where = ""
    if event.job_id is not None:
        where = str(event.job_id) + (f".{event.index}" if event.index is not None else "")
        where += f" #{event.attempt}" if event.attempt else ""
    detail = " ".join(f"{k}={json.dumps(v)}" for k, v in event.detail.items() if v is not None)
    print(f"{when(event.time)} {event.kind:<14} {where:<10} {detail}", flush=True)
