"""condor_hold: hold jobs that wait, so they do not start until condor_release."""

from __future__ import annotations

import sys

from drover.compat.htcondor.action import OPTIONS, run
from drover.compat.htcondor.common import HELD


def main(argv: list[str] | None = None) -> int:
    return run("condor_hold", list(sys.argv[1:] if argv is None else argv), OPTIONS, "hold",
               lambda client, refs: client.hold(refs), lambda ad: ad["JobStatus"] != HELD)


if __name__ == "__main__":
    raise SystemExit(main())
