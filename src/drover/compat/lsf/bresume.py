"""bresume: resume jobs bstop suspended, as IBM Spectrum LSF's bresume does: a stopped job runs
on, a held one (PSUSP, bsub -H) may start."""

from __future__ import annotations

import sys

from drover.compat.lsf.bstop import OPTIONS as STOP_OPTIONS
from drover.compat.lsf.bstop import WAITING
from drover.compat.lsf.jobaction import run
from drover.compat.lsf.syntax import Given

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import ActionResult, JobInfo

OPTIONS = STOP_OPTIONS
USAGE = """Usage: bresume [-h] [-V] [-J job_name] [-q queue_name] [-u user_name | -u all]
             [0] [job_ID ... | "job_ID[index]" ...]"""


def _act(client: Client, job: JobInfo, ref: str, given: list[Given]) -> list[ActionResult]:
    if job.state in WAITING:
        return client.release([ref])
    return client.resume([ref])


def main(argv: list[str] | None = None) -> int:
    return run("bresume", list(sys.argv[1:] if argv is None else argv), OPTIONS, USAGE, "resumed", _act)


if __name__ == "__main__":
    raise SystemExit(main())
