"""bstop: suspend jobs as IBM Spectrum LSF's bstop does: a running job is stopped (USUSP), a
pending one held (PSUSP) until bresume."""

from __future__ import annotations

import sys

from drover.compat.lsf.jobaction import run
from drover.compat.lsf.syntax import Given
from drover.compat.optiontable import Arity, Mark, Option

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import ActionResult, JobInfo

OPTIONS = [
    Option(("-J",), Arity.REQUIRED, Mark.SUPPORTED, "the user's unfinished jobs of this name", "job_name"),
    Option(("-u",), Arity.REQUIRED, Mark.SUPPORTED, "this user's jobs (`all`: everyone's)", "user_name | all"),
    Option(("-q",), Arity.REQUIRED, Mark.SUPPORTED, "jobs of this queue", "queue_name"),
    Option(("-h",), Arity.NONE, Mark.SUPPORTED, "print the usage"),
    Option(("-V",), Arity.NONE, Mark.SUPPORTED, "print Drover's version, as LSF's release"),
]
USAGE = """Usage: bstop [-h] [-V] [-J job_name] [-q queue_name] [-u user_name | -u all]
             [0] [job_ID ... | "job_ID[index]" ...]"""
WAITING = ("pending", "held")


def _act(client: Client, job: JobInfo, ref: str, given: list[Given]) -> list[ActionResult]:
    if job.state in WAITING:
        return client.hold([ref])
    return client.suspend([ref])


def main(argv: list[str] | None = None) -> int:
    return run("bstop", list(sys.argv[1:] if argv is None else argv), OPTIONS, USAGE, "stopped", _act)


if __name__ == "__main__":
    raise SystemExit(main())
