"""condor_rm: remove jobs (cluster, cluster.proc, user, -constraint, -all): a running job is stopped."""

from __future__ import annotations

import sys

from drover.compat.htcondor.action import OPTIONS as ACTION_OPTIONS
from drover.compat.htcondor.action import run
from drover.compat.optiontable import Arity, Mark, Option

OPTIONS = sorted([*ACTION_OPTIONS, Option(("-forcex",), Arity.NONE, Mark.SUPPORTED, "a job already removed "
                                          "counts as removed (Drover forgets no removed job later)")],
                 key=lambda o: o.names[0])


def main(argv: list[str] | None = None) -> int:
    return run("condor_rm", list(sys.argv[1:] if argv is None else argv), OPTIONS, "removal",
               lambda client, refs: client.cancel(refs), lambda ad: True)


if __name__ == "__main__":
    raise SystemExit(main())
