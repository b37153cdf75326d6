"""qrerun: stop running jobs and put them back in the queue, to run again from the start."""

from __future__ import annotations

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.pbs.jobaction import run

OPTIONS = [
    Option(("-W",), Arity.REQUIRED, Mark.APPROXIMATED, "`force` changes nothing: Drover requeues a job the same "
           "way", "force"),
]
USAGE = "usage: qrerun [-W force] job_identifier..."


def main(argv: list[str] | None = None) -> int:
    return run("qrerun", argv, OPTIONS, USAGE,
               lambda client, refs, _given: client.requeue(refs))


if __name__ == "__main__":
    raise SystemExit(main())
