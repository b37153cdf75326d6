"""condor_release: release held jobs, which then wait to run again."""

from __future__ import annotations

import sys

from drover.compat.htcondor.action import OPTIONS, run
from drover.compat.htcondor.common import HELD


def main(argv: list[str] | None = None) -> int:
    return run("condor_release", list(sys.argv[1:] if argv is None else argv), OPTIONS, "release",
               lambda client, refs: client.release(refs), lambda ad: ad["JobStatus"] == HELD)


if __name__ == "__main__":
    raise SystemExit(main())
