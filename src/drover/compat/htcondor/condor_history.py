"""condor_history: the jobs that ended, newest first, with condor_q's projections (-af,
-format, -long, -json) and selections (cluster, cluster.proc, owner, -constraint)."""

from __future__ import annotations

import sys

from drover.compat.htcondor.query import PROJECTION_OPTIONS, run
from drover.compat.optiontable import Arity, Mark, Option

OPTIONS = sorted([
    *PROJECTION_OPTIONS,
    Option(("-backwards",), Arity.NONE, Mark.SUPPORTED, "newest first (the default)"),
    Option(("-file",), Arity.REQUIRED, Mark.REFUSED, "Drover keeps its history in its store, not in files", "file"),
    Option(("-limit",), Arity.REQUIRED, Mark.SUPPORTED, "at most this many jobs", "number"),
    Option(("-match",), Arity.REQUIRED, Mark.SUPPORTED, "at most this many jobs", "number"),
    Option(("-userlog",), Arity.REQUIRED, Mark.REFUSED, "condor_wait reads a job event log", "file"),
], key=lambda o: o.names[0])

USAGE = """Usage: condor_history [options]
    where [options] are
	-help			This message
	-constraint <expr>	Display jobs that satisfy the expression
	-limit <num>		Limit the number of results
	-long			Verbose output (entire ClassAds)
	-json			Output in JSON format
	-af[:jlhVr,tng] <attr> [attr2 [attr3 ...]]  Print attr(s) with automatic formatting
	-format <fmt> <attr>	Print attribute with a format specifier
	<cluster>		Display jobs in this cluster
	<cluster>.<proc>	Display this job
	<owner>			Display jobs of this owner"""


def main(argv: list[str] | None = None) -> int:
    return run("condor_history", list(sys.argv[1:] if argv is None else argv), OPTIONS, USAGE, history=True)


if __name__ == "__main__":
    raise SystemExit(main())
