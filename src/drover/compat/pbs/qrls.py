"""qrls: release the user hold of jobs (qhold's, or qsub -h's)."""

from __future__ import annotations

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.pbs.jobaction import run, user_holds_only

OPTIONS = [
    Option(("-h",), Arity.REQUIRED, Mark.SUPPORTED, "`u`, the user hold (the default); `o`, `s` and `p` ✗",
           "hold_list"),
]
USAGE = "usage: qrls [-h hold_list] job_identifier..."


def main(argv: list[str] | None = None) -> int:
    return run("qrls", argv, OPTIONS, USAGE,
               lambda client, refs, _given: client.release(refs), user_holds_only("qrls"))


if __name__ == "__main__":
    raise SystemExit(main())
