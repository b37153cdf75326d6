"""qalter: change jobs that wait. Drover can change their priority (-p), their queue (-q) and
user holds (-h); every other option of qalter is refused with a clear error, never silently dropped."""

from __future__ import annotations

import sys

from drover.compat.gridengine.common import failed, user_name
from drover.compat.gridengine.jobaction import usage
from drover.compat.gridengine.jobrefs import resolve
from drover.compat.gridengine.submit_options import QALTER_OPTIONS
from drover.compat.gridengine.syntax import GeUsageError, Operands, Parsed, parse
from drover.compat.optiontable import Mark
from drover.core.errors import DroverError

OPTIONS = QALTER_OPTIONS
HOLDS = {"u": "hold", "U": "release", "n": "release"}  # qalter -h: set a user hold, or clear it


def main(argv: list[str] | None = None) -> int:
    try:
        parsed = parse(list(sys.argv[1:] if argv is None else argv), OPTIONS, Operands.JOBS)
    except GeUsageError as error:
        print(usage("qalter", OPTIONS), file=sys.stderr)
        print(error, file=sys.stderr)
        return 1
    if any(g.key == "help" for g in parsed.given):
        print(usage("qalter", OPTIONS))
        return 0
    refused = [g for g in parsed.given if g.option.mark is Mark.REFUSED]
    if refused:
        print(f"qalter: {refused[0].option.names[0]}: {refused[0].option.note}", file=sys.stderr)
        return 1
    try:
        return _alter(parsed)
    except DroverError as error:
        return failed("qalter", error)


def _alter(parsed: Parsed) -> int:
    priority = next((g.value for g in reversed(parsed.given) if g.key == "p"), None)
    queue_given = next((g.value for g in reversed(parsed.given) if g.key == "q"), None)
    queue = None if queue_given is None else target_queue(queue_given)
    if queue_given is not None and queue is None:
        print(f"qalter: -q {queue_given}: give one queue by name (Drover matches no queue patterns)",
              file=sys.stderr)
        return 1
    hold = next((g.value for g in reversed(parsed.given) if g.key == "h"), None)
    if hold is not None and (not hold or set(hold) - set(HOLDS)):
        print(f"qalter: -h {hold}: Drover has user holds only (-h u, U or n)", file=sys.stderr)
        return 1
    users = [u for g in parsed.given if g.key == "u" and g.value for u in g.value.split(",")]
    if not parsed.operands and not users:
        print(usage("qalter", OPTIONS), file=sys.stderr)
        print("ERROR! no option argument", file=sys.stderr)
        return 1
    if priority is None and hold is None and queue is None:
        print("qalter: no change requested (Drover changes -p, -q and -h)", file=sys.stderr)
        return 1
    if priority is not None and not (priority.isascii() and priority.lstrip("-").isdigit()):
        print(f'qalter: ERROR! invalid option argument "-p {priority}"', file=sys.stderr)
        return 1
    verify = any(g.key == "verify" for g in parsed.given)
    from drover.client.client import Client

    status = 0
    with Client() as client:
        found = resolve(client, parsed.operands, users)
        for missing in found.missing:
            print(f'denied: job "{missing}" does not exist', file=sys.stderr)
            status = 1
        for target in found.targets:
            refs = target.refs()
            if priority is not None:
                failed = [] if verify else [r for r in client.alter(refs, int(priority)) if not r.ok]
                for result in failed:
                    print(f"qalter: {result.message}", file=sys.stderr)
                status = status or (1 if failed else 0)
                if not failed:
                    print(f"modified priority of job {target.job.id}")
            if queue is not None:
                failed = [] if verify else [r for r in client.alter(refs, queue=queue) if not r.ok]
                for result in failed:
                    print(f"qalter: {result.message}", file=sys.stderr)
                status = status or (1 if failed else 0)
                if not failed:
                    print(f"modified hard queue list of job {target.job.id}")
            if hold is not None:
                act = client.hold if HOLDS[hold[-1]] == "hold" else client.release
                results = [] if verify else act(refs)
                # Setting a hold a job already has (or clearing one it lacks) changes nothing and
                # is no error in Grid Engine; another user's job is refused.
                failed = [r for r in results if not r.ok] if target.job.owner != user_name() else []
                for result in failed:
                    print(f"qalter: {result.message}", file=sys.stderr)
                status = status or (1 if failed else 0)
                if not failed:
                    print(f"modified hold of job {target.job.id}")
    return status


def target_queue(text: str) -> str | None:
    """-q's queue as Drover names it: `all.q` is `default`, `q@host` is `q`; None for a list of
    several queues or a pattern, which cannot name the one queue a job moves to."""
    names = [item for item in text.split(",") if item]
    if len(names) != 1:
        return None
    name = names[0].partition("@")[0]
    if not name or any(char in name for char in "*?[]"):
        return None
    return "default" if name == "all.q" else name


if __name__ == "__main__":
    raise SystemExit(main())
