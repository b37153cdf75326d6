"""qdel: delete jobs and array tasks (`12`, `12.3`, `12.1-5:2`, names, `-u USER`)."""

from __future__ import annotations

import sys

from drover.compat.gridengine.jobaction import parse_or_usage, run, with_task_option
from drover.compat.gridengine.jobrefs import Target
from drover.compat.optiontable import Arity, Mark, Option

OPTIONS = [
    Option(("-f",), Arity.NONE, Mark.SUPPORTED, "Drover stops a job the same way with or without it"),
    Option(("-help",), Arity.NONE, Mark.SUPPORTED, "prints the usage"),
    Option(("-t",), Arity.REQUIRED, Mark.SUPPORTED, "the tasks of the jobs named after it (also `JOB.TASKS`)",
           "task_id_range"),
    Option(("-u",), Arity.REQUIRED, Mark.SUPPORTED, "every job of these users; `*`: all users", "wc_user_list"),
]
RUNNING = ("dispatched", "running", "suspended", "completing")


def report(target: Target, user: str) -> list[str]:
    """The qmaster's words: a job that runs is registered for deletion (it gets its signal), one
    that waits is deleted at once."""
    job = target.job
    if target.indices is None:
        running = any(t.state in RUNNING for t in job.tasks)
        return [f"{user} has registered the job {job.id} for deletion" if running else
                f"{user} has deleted job {job.id}"]
    states = {t.index: t.state for t in job.tasks}
    return [f"{user} has registered the job-array task {job.id}.{i} for deletion" if states.get(i) in RUNNING
            else f"{user} has deleted job-array task {job.id}.{i}" for i in target.indices]


def main(argv: list[str] | None = None) -> int:
    parsed = parse_or_usage("qdel", list(sys.argv[1:] if argv is None else argv), OPTIONS)
    if isinstance(parsed, int):
        return parsed
    return run("qdel", with_task_option(parsed), lambda client, refs: client.cancel(refs), report)


if __name__ == "__main__":
    raise SystemExit(main())
