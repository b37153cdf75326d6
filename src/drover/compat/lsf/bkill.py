"""bkill: kill jobs (`12`, an array element `12[3]`, `0` for all of yours, -J by name, -u a
user's), or send them a signal (-s), as IBM Spectrum LSF's bkill does."""

from __future__ import annotations

import signal
import sys

from drover.compat.lsf.jobaction import run
from drover.compat.lsf.syntax import Given, LsfUsageError, value
from drover.compat.optiontable import Arity, Mark, Option

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import ActionResult, JobInfo

OPTIONS = [
    Option(("-s",), Arity.REQUIRED, Mark.SUPPORTED, "send this signal (`USR1`, `SIGUSR1`, `10`) instead of "
           "killing", "signal_value"),
    Option(("-J",), Arity.REQUIRED, Mark.SUPPORTED, "the user's unfinished jobs of this name (`*` matches any "
           "text)", "job_name"),
    Option(("-u",), Arity.REQUIRED, Mark.SUPPORTED, "this user's jobs (`all`: everyone's, an operator's)",
           "user_name | all"),
    Option(("-q",), Arity.REQUIRED, Mark.SUPPORTED, "jobs of this queue", "queue_name"),
    Option(("-C",), Arity.REQUIRED, Mark.APPROXIMATED, "the reason is not kept", "kill_reason"),
    Option(("-r",), Arity.NONE, Mark.APPROXIMATED, "the job is killed as without -r"),
    Option(("-l",), Arity.NONE, Mark.SUPPORTED, "list the signal names"),
    Option(("-h",), Arity.NONE, Mark.SUPPORTED, "print the usage"),
    Option(("-V",), Arity.NONE, Mark.SUPPORTED, "print Drover's version, as LSF's release"),
]
USAGE = """Usage: bkill [-h] [-V] [-l] [-r | -s signal_value] [-C kill_reason] [-J job_name]
             [-q queue_name] [-u user_name | -u all] [0] [job_ID ... | "job_ID[index]" ...]"""


def signal_name(text: str) -> str:
    """-s's value (`USR1`, `SIGUSR1`, `10`) as Drover's signal name, read as PBS's qsig reads it."""
    from drover.compat.pbs.qsig import signal_name as pbs_signal_name
    from drover.compat.pbs.syntax import PbsUsageError

    try:
        return pbs_signal_name(text)
    except PbsUsageError:
        raise LsfUsageError(f"bkill: Illegal signal value: {text}", usage=False) from None


def _check(given: list[Given]) -> None:
    if value(given, "s"):
        signal_name(value(given, "s"))


def _act(client: Client, job: JobInfo, ref: str, given: list[Given]) -> list[ActionResult]:
    chosen = value(given, "s")
    if chosen:
        return client.signal([ref], signal_name(chosen))
    return client.cancel([ref])


def main(argv: list[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words == ["-l"]:
        print(" ".join(s.name[3:] for s in sorted(signal.Signals, key=lambda s: s.value) if not s.name.startswith("SIGRT")))
        return 0
    doing = "signaled" if "-s" in words else "terminated"
    return run("bkill", words, OPTIONS, USAGE, doing, _act, _check)


if __name__ == "__main__":
    raise SystemExit(main())
