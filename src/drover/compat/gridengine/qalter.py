"""qalter: change a waiting job. Supported: -p PRIORITY, -h u (hold), -h U (release)."""

from __future__ import annotations

import sys

from drover.core.errors import DroverError


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    priority, hold, refs = None, None, []
    i = 0
    while i < len(args):
        if args[i] == "-p" and i + 1 < len(args):
            priority, i = int(args[i + 1]), i + 2
        elif args[i] == "-h" and i + 1 < len(args):
            hold, i = args[i + 1], i + 2
        elif args[i].startswith("-"):
            print(f"qalter: {args[i]} is not supported by Drover (supported: -p, -h u, -h U)", file=sys.stderr)
            return 1
        else:
            refs.append(args[i])
            i += 1
    if not refs or (priority is None and hold is None):
        print("qalter: give -p PRIORITY or -h u|U, and job ids", file=sys.stderr)
        return 1
    try:
        from drover.client.client import Client

        with Client() as client:
            results = []
            if priority is not None:
                results += client.action_json("alter", refs, priority=priority)
            if hold is not None:
                results += client.action_json("release" if hold == "U" else "hold", refs)
    except DroverError as error:
        print(f"qalter: {error}", file=sys.stderr)
        return 1
    status = 0
    for result in results:
        if result["ok"]:
            print(f"modified job {result['ref']}")
        else:
            print(f"qalter: {result['message']}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
