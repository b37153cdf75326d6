"""qhold and qrls: put a user hold on jobs and array tasks, and take it off."""

from __future__ import annotations

import sys

from drover.compat.gridengine.jobaction import parse_or_usage, run, with_task_option
from drover.compat.gridengine.jobrefs import Target
from drover.compat.gridengine.syntax import Parsed
from drover.compat.optiontable import DROVER_OWN, Arity, Mark, Option

OPTIONS = [
    Option(("-h",), Arity.REQUIRED, Mark.SUPPORTED, "`u`, a user hold (the default); `o`, `s` (operator and "
           "system holds) ✗", "{u|o|s}..."),
    Option(("-help",), Arity.NONE, Mark.SUPPORTED, "prints the usage"),
    Option(("-t",), Arity.REQUIRED, Mark.SUPPORTED, f"{DROVER_OWN}, as in qdel (the man page lacks it; Grid Engine's "
           "parser takes it): the tasks of the jobs named with it (also `JOB.TASKS`)", "task_id_range"),
    Option(("-u",), Arity.REQUIRED, Mark.SUPPORTED, "every job of these users; `*`: all users", "wc_user_list"),
]


def report(target: Target, user: str) -> list[str]:
    if target.indices is None:
        return [f"modified hold of job {target.job.id}"]
    return [f"modified hold of job-array task {target.job.id}.{index}" for index in target.indices]


def holds_refused(command: str, parsed: Parsed) -> bool:
    """Only user holds exist on Drover: -h o or -h s is refused, not taken for -h u."""
    for given in parsed.given:
        if given.key == "h" and set(given.value or "") - set("u"):
            print(f"{command}: -h {given.value}: Drover has user holds only (-h u)", file=sys.stderr)
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    parsed = parse_or_usage("qhold", list(sys.argv[1:] if argv is None else argv), OPTIONS)
    if isinstance(parsed, int):
        return parsed
    if holds_refused("qhold", parsed):
        return 1
    return run("qhold", with_task_option(parsed), lambda client, refs: client.hold(refs), report)


if __name__ == "__main__":
    raise SystemExit(main())
