"""qdel: delete jobs, arrays and subjobs (`12`, `12.server`, `12[]`, `12[3]`)."""

from __future__ import annotations

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.pbs.jobaction import run

OPTIONS = [
    Option(("-W",), Arity.REQUIRED, Mark.APPROXIMATED, "`force` and `suppress_email=N` change nothing: Drover "
           "stops a job the same way", "force|suppress_email=N"),
    Option(("-x",), Arity.NONE, Mark.APPROXIMATED, "the job's history is kept"),
    Option(("--version",), Arity.NONE, Mark.SUPPORTED, "prints `pbs_version =` Drover's version"),
]
USAGE = "usage:\n\tqdel [-W force|suppress_email=X] [-x] job_identifier...\n\tqdel --version"


def main(argv: list[str] | None = None) -> int:
    return run("qdel", argv, OPTIONS, USAGE,
               lambda client, refs, _given: client.cancel(refs))


if __name__ == "__main__":
    raise SystemExit(main())
