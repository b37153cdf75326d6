"""qhold: put a user hold on jobs that wait (`-h u`, the default)."""

from __future__ import annotations

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.pbs.jobaction import run, user_holds_only

OPTIONS = [
    Option(("-h",), Arity.REQUIRED, Mark.SUPPORTED, "`u`, a user hold (the default); `o`, `s` and `p` ✗: Drover "
           "has user holds only", "hold_list"),
]
USAGE = "usage: qhold [-h hold_list] job_identifier..."


def main(argv: list[str] | None = None) -> int:
    return run("qhold", argv, OPTIONS, USAGE,
               lambda client, refs, _given: client.hold(refs), user_holds_only("qhold"))


if __name__ == "__main__":
    raise SystemExit(main())
