"""What qdel, qhold and qrls share: parse a Grid Engine command line, resolve its job list,
act through the client, and answer with the qmaster's messages."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from drover.compat.gridengine.common import failed, user_name
from drover.compat.gridengine.jobrefs import Resolved, Target, resolve
from drover.compat.gridengine.syntax import GeUsageError, Operands, Parsed, parse
from drover.compat.optiontable import Option
from drover.core.errors import DroverError, Forbidden

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import ActionResult


# The qmaster's words for another user's job (MSG_JOB_DELETEPERMS_SU).
_NOT_YOURS = {"qdel": '{user} - you do not have the necessary privileges to delete the job "{job}"'}


def usage(command: str, options: Sequence[Option], operands: str = "wc_job_range_list") -> str:
    lines = [f"usage: {command} [options] {operands}"]
    lines += [f"   [{' '.join(filter(None, (o.names[0], o.metavar)))}]" for o in options]
    return "\n".join(lines)


def parse_or_usage(command: str, argv: list[str], options: Sequence[Option]) -> Parsed | int:
    """The parsed command line, or after printing the usage and Grid Engine's error, the exit
    status 1 (as qdel, qhold and qrls exit on a bad command line)."""
    try:
        parsed = parse(argv, options, Operands.JOBS)
    except GeUsageError as error:
        print(error, file=sys.stderr)  # the error first, then the usage, as qacct -t does
        print(usage(command, options), file=sys.stderr)
        return 1
    if any(g.key == "help" for g in parsed.given):
        print(usage(command, options))
        return 0
    return parsed


def with_task_option(parsed: Parsed) -> Parsed:
    """`-t RANGE`: the tasks of the job ids given with it, as if each were written `ID.RANGE`."""
    ranges = [g.value for g in parsed.given if g.key == "t" and g.value]
    if not ranges:
        return parsed
    operands = [f"{word}.{ranges[-1]}" if (word.isascii() and word.isdigit()) else word for word in parsed.operands]
    return Parsed(parsed.given, operands, parsed.arguments)


def run(command: str, parsed: Parsed, act: Callable[[Client, list[str]], list[ActionResult]],
        report: Callable[[Target, str], list[str]]) -> int:
    """`report(target, user)`: the lines Grid Engine prints once the action held for a target."""
    users = [u for g in parsed.given if g.key == "u" and g.value for u in g.value.split(",")]
    if not parsed.operands and not users:
        print(usage(command, []), file=sys.stderr)
        print("ERROR! no option argument", file=sys.stderr)
        return 1
    me = user_name()
    status = 0
    try:
        from drover.client.client import Client

        with Client() as client:
            theirs: list[tuple[str, Forbidden]] = []
            found: Resolved = resolve(client, parsed.operands, users, theirs)
            for ref, refusal in theirs:  # another user's job
                print(_NOT_YOURS[command].format(user=me, job=ref) if command in _NOT_YOURS else
                      f"{command}: {refusal}", file=sys.stderr)
                status = 1
            for missing in found.missing:
                print(f'denied: job "{missing}" does not exist', file=sys.stderr)
                status = 1
            for target in found.targets:
                results = act(client, target.refs())
                refused = [r for r in results if not r.ok]
                if refused and target.job.owner != me:
                    for result in refused:
                        print(f"{command}: {result.message}", file=sys.stderr)
                    status = 1
                    continue
                for line in report(target, me):
                    print(line)
    except DroverError as error:
        return failed(command, error)
    return status
