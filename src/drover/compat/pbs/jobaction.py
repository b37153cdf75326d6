"""What qdel, qhold, qrls, qsig and qrerun share: parse the command line, take each job id as
PBS does (`12`, `12.server`, `12[]`, `12[3]`), act through the client, and say what failed as
PBS's commands say it (`qdel: Unknown Job Id 12.server`), exiting with the last error's number
modulo 256. PBS's commands print nothing when all went well."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from drover.compat.pbs import common
from drover.compat.pbs.common import (
    EXIT_FINISHED,
    EXIT_UNKNOWN_JOB,
    PBSE_BADSTATE,
    PBSE_PERM,
    drover_ref,
    parse_ref,
)
from drover.compat.pbs.syntax import Given, PbsUsageError, last
from drover.core.errors import Forbidden, NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.compat.optiontable import Option
    from drover.protocol.api import ActionResult, JobInfo

# An action's refusal by the cluster, as PBS's error: its words and number (pbs_error.h).
_REFUSALS = {"forbidden": ("Unauthorized Request", PBSE_PERM), "conflict": ("Request invalid for state of job",
                                                                             PBSE_BADSTATE)}


def run(command: str, argv: list[str] | None, options: Sequence[Option], usage: str,
        act: Callable[[Client, list[str], list[Given]], list[ActionResult]],
        check: Callable[[list[Given]], None] | None = None) -> int:
    """`act` on each job id of the command line in turn; the usage, as the message, when none is
    given (a command with --version among its `options`, as qdel, answers it instead). A bad
    option is said in getopt's words alone, without the usage."""

    def checked(given: list[Given], operands: list[str]) -> None:
        if check is not None:
            check(given)
        if not operands and last(given, "version") is None:
            raise PbsUsageError(usage)

    def each(client: Client, given: list[Given], operands: list[str]) -> int:
        status = 0
        for word in operands:
            status = _one(command, client, word, given, act) or status
        return status

    return common.run(command, argv, options, "", each, checked)


def _one(command: str, client: Client, word: str,
         given: list[Given], act: Callable[[Client, list[str], list[Given]], list[ActionResult]]) -> int:
    ref = parse_ref(word)
    if ref is None:
        print(f"{command}: illegally formed job identifier: {word}", file=sys.stderr)
        return 1
    try:
        job: JobInfo = client.job(ref[0])
    except NotFound:
        print(f"{command}: Unknown Job Id {word}", file=sys.stderr)
        return EXIT_UNKNOWN_JOB
    except Forbidden:  # another user's job
        words, number = _REFUSALS["forbidden"]
        print(f"{command}: {words} {word}", file=sys.stderr)
        return number % 256
    if ref[1] is not None and ref[1] not in {t.index for t in job.tasks}:
        print(f"{command}: Unknown Job Id {word}", file=sys.stderr)
        return EXIT_UNKNOWN_JOB
    if job.ended_at is not None:
        print(f"{command}: Job has finished {word}", file=sys.stderr)
        return EXIT_FINISHED
    status = 0
    for result in act(client, [drover_ref(*ref)], given):
        if not result.ok:
            words, number = _REFUSALS.get(result.kind, (result.message, 1))
            print(f"{command}: {words} {word}", file=sys.stderr)
            status = number % 256
    return status


def user_holds_only(command: str) -> Callable[[list[Given]], None]:
    """qhold's and qrls's check of `-h hold_list`: Drover has the user hold (`u`) alone."""
    def check(given: list[Given]) -> None:
        for g in given:
            if g.key == "h" and (not g.value or set(g.value) - {"u"}):
                raise PbsUsageError(f"{command}: -h {g.value}: Drover has user holds only (-h u)", 1, usage=False)
    return check
