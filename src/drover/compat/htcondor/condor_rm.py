"""condor_rm: remove jobs (cluster, cluster.proc, user, -constraint, -all): a running job is stopped."""

from __future__ import annotations

import sys

from drover.compat.htcondor.action import OPTIONS, run


def main(argv: list[str] | None = None) -> int:
    return run("condor_rm", list(sys.argv[1:] if argv is None else argv), OPTIONS, "removal",
               lambda client, refs: client.cancel(refs), lambda ad: True)


if __name__ == "__main__":
    raise SystemExit(main())
