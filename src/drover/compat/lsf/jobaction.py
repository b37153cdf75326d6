"""What bkill, bstop and bresume share: parse the command line, take each job id as LSF does
(`12`, an element `12[3]`, `0` for all of the user's jobs, or -J's name and -u's user), act
through the client, and say what happened as LSF's commands say it (`Job <12> is being
terminated`, `Job <12>: No matching job found`), exiting 255 when any failed."""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Callable, Sequence

from drover.compat.lsf import common
from drover.compat.lsf.common import EXIT_FAILURE, drover_ref, parse_ref, user_name
from drover.compat.lsf.syntax import Given, LsfUsageError, approximate, value
from drover.compat.optiontable import Option
from drover.core.errors import Forbidden, NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import ActionResult, JobInfo

# act(client, job, Drover's ref, the options) → the results, or None when there is nothing to do.
Act = Callable[["Client", "JobInfo", str, list[Given]], list["ActionResult"]]
_REFUSALS = {"forbidden": "User permission denied", "conflict": "Operation not permitted in the job's state",
             "not_found": "No matching job found"}


def run(command: str, argv: list[str], options: Sequence[Option], usage: str, doing: str, act: Act,
        check: Callable[[list[Given]], None] | None = None) -> int:
    """`doing`: LSF's words for the action, `Job <12> is being {doing}`."""

    def checked(given: list[Given], operands: list[str]) -> None:
        approximate(command, given)
        if check is not None:
            check(given)
        if not operands and not {g.key for g in given} & {"J", "u", "q"}:
            raise LsfUsageError(f"{command}: A job ID or one of -J, -u, -q must be specified")

    def each(client: Client, given: list[Given], operands: list[str]) -> int:
        targets = _targets(command, client, given, operands)
        if targets is None:
            return EXIT_FAILURE
        status = 0
        for word, job, ref in targets:
            status = _one(client, word, job, ref, given, doing, act) or status
        return status

    return common.run(command, argv, options, usage, each, checked)


def _targets(command: str, client: Client, given: list[Given], operands: list[str]
             ) -> list[tuple[str, JobInfo | Forbidden | None, tuple[int, int | None] | None]] | None:
    """Each job named, with what the cluster knows of it (None: nothing); None when `0`, -J or
    -u matched no unfinished job (LSF says so); another user's job, the cluster's refusal. `0` is every unfinished job of the user's (of
    -J's name, -q's queue, -u's user); without it and without ids, only the newest of them."""
    out: list[tuple[str, JobInfo | Forbidden | None, tuple[int, int | None] | None]] = []
    every = "0" in operands
    everyone = every or not operands
    for word in operands:
        if word == "0":
            continue
        ref = parse_ref(word)
        if ref is None:
            out.append((word, None, None))
            continue
        try:
            out.append((word, client.job(ref[0]), ref))
        except NotFound:
            out.append((word, None, ref))
        except Forbidden as refusal:
            out.append((word, refusal, ref))
    if everyone:
        user = value(given, "u") or user_name()
        listing = client.jobs(user=None if user == "all" else user)
        name, queue = value(given, "J"), value(given, "q")
        matched = [job for job in listing if (not name or fnmatch.fnmatchcase(job.name, name))
                   and (not queue or job.queue == ("default" if queue == "normal" else queue))]
        if not matched and not out:
            print("No unfinished job found", file=sys.stderr)
            return None
        if not every:
            matched = sorted(matched, key=lambda job: job.id)[-1:]
        out += [(str(job.id), client.job(job.id), (job.id, None)) for job in matched]
    return out


def _one(client: Client, word: str, job: JobInfo | Forbidden | None, ref: tuple[int, int | None] | None,
         given: list[Given], doing: str, act: Act) -> int:
    if ref is None:
        print(f"{word}: Illegal job ID.", file=sys.stderr)
        return EXIT_FAILURE
    shown = f"{ref[0]}[{ref[1]}]" if ref[1] is not None else str(ref[0])
    if isinstance(job, Forbidden):
        print(f"Job <{shown}>: {_REFUSALS['forbidden']}", file=sys.stderr)
        return EXIT_FAILURE
    if job is None or (ref[1] is not None and ref[1] not in _indices(job)):
        print(f"Job <{shown}>: No matching job found", file=sys.stderr)
        return EXIT_FAILURE
    task_ended = ref[1] is not None and any(t.index == ref[1] and t.state not in _LIVE for t in job.tasks)
    if job.ended_at is not None or task_ended:
        print(f"Job <{shown}>: Job has already finished", file=sys.stderr)
        return EXIT_FAILURE
    status = 0
    for result in act(client, job, drover_ref(*ref), given):
        if result.ok:
            print(f"Job <{shown}> is being {doing}")
        else:
            print(f"Job <{shown}>: {_REFUSALS.get(result.kind, result.message)}", file=sys.stderr)
            status = EXIT_FAILURE
    return status


_LIVE = ("pending", "held", "dispatched", "running", "suspended", "completing")


def _indices(job: JobInfo) -> set[int]:
    from drover.compat.lsf.common import elements

    return {task.index for task in elements(job)}
