"""condor_q: the jobs in the queue as HTCondor shows them: the batch table (the default),
-nobatch, -af, -format, -long, -json; by cluster, cluster.proc, owner and -constraint."""

from __future__ import annotations

import sys

from drover.compat.htcondor.query import PROJECTION_OPTIONS, run
from drover.compat.optiontable import Arity, Mark, Option

OPTIONS = sorted([
    *PROJECTION_OPTIONS,
    Option(("-allusers",), Arity.NONE, Mark.SUPPORTED, "every user's jobs (the default is your own)"),
    Option(("-analyze", "-better-analyze"), Arity.NONE, Mark.REFUSED, "`drover why JOB` says why a job waits"),
    Option(("-batch",), Arity.NONE, Mark.SUPPORTED, "one line per batch (the default)"),
    Option(("-dag",), Arity.NONE, Mark.MEANINGLESS, "Drover runs no DAGMan"),
    Option(("-global",), Arity.NONE, Mark.SUPPORTED, "every user's jobs: the cluster has one queue"),
    Option(("-hold",), Arity.NONE, Mark.SUPPORTED, "held jobs only, with when and why they were held"),
    Option(("-idle",), Arity.NONE, Mark.SUPPORTED, "idle jobs only"),
    Option(("-nobatch",), Arity.NONE, Mark.SUPPORTED, "one line per job"),
    Option(("-run",), Arity.NONE, Mark.SUPPORTED, "running jobs only"),
    Option(("-submitter",), Arity.REQUIRED, Mark.SUPPORTED, "this user's jobs", "submitter"),
    Option(("-totals",), Arity.NONE, Mark.SUPPORTED, "the totals line (shown by the default table)"),
    Option(("-wide",), Arity.NONE, Mark.MEANINGLESS, "lines are never cut"),
], key=lambda o: o.names[0])

USAGE = """Usage: condor_q [general-opts] [restriction-list] [output-opts | analyze-opts]
    [general-opts] are
	-global			 Query all Schedulers in this pool
	-allusers		 Consider jobs from all users
    [restriction-list] each restriction may be one of
	<cluster>		 Get information about specific cluster
	<cluster>.<proc>	 Get information about specific job
	<owner>			 Information about jobs owned by <owner>
	-constraint <expr>	 Get information about jobs that match <expr>
    [output-opts] are
	-long			 Display entire ClassAds
	-json			 Display entire ClassAds in JSON format
	-af[:jlhVr,tng] <attr> [attr2 [attr3 ...]]  Print attr(s) with automatic formatting
	-format <fmt> <attr>	 Print attribute attr using format fmt
	-nobatch		 Display one line per job"""


def main(argv: list[str] | None = None) -> int:
    return run("condor_q", list(sys.argv[1:] if argv is None else argv), OPTIONS, USAGE, history=False)


if __name__ == "__main__":
    raise SystemExit(main())
