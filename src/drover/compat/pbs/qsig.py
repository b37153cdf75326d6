"""qsig: send a signal to running jobs (`-s SIGNAL`, a name with or without SIG, or a number;
SIGTERM by default). PBS's `suspend` and `resume` suspend and resume the job."""

from __future__ import annotations

import signal

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.pbs.common import PBSE_UNKSIG
from drover.compat.pbs.jobaction import run
from drover.compat.pbs.syntax import Given, PbsUsageError, last

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import ActionResult

OPTIONS = [
    Option(("-s",), Arity.REQUIRED, Mark.SUPPORTED, "the signal: `TERM`, `SIGKILL`, `9`...; `suspend` and `resume`",
           "signal"),
]
USAGE = "usage: qsig [-s signal] job_identifier..."


def signal_name(text: str) -> str:
    """-s's value as Drover's signal name (SIGUSR1)."""
    if text.isascii() and text.isdigit():
        try:
            return signal.Signals(int(text)).name
        except ValueError:
            pass
    else:
        name = text.upper() if text.upper().startswith("SIG") else "SIG" + text.upper()
        if name in signal.Signals.__members__:
            return name
    raise PbsUsageError(f"qsig: Unknown signal name {text}", PBSE_UNKSIG % 256, usage=False)


def _act(client: Client, refs: list[str], given: list[Given]) -> list[ActionResult]:
    chosen = last(given, "s")
    text = chosen.value or "" if chosen is not None else "SIGTERM"
    if text.lower() == "suspend":
        return client.suspend(refs)
    if text.lower() == "resume":
        return client.resume(refs)
    return client.signal(refs, signal_name(text))


def _check(given: list[Given]) -> None:
    chosen = last(given, "s")
    if chosen is not None and (chosen.value or "").lower() not in ("suspend", "resume"):
        signal_name(chosen.value or "")


def main(argv: list[str] | None = None) -> int:
    return run("qsig", argv, OPTIONS, USAGE, _act, _check)


if __name__ == "__main__":
    raise SystemExit(main())
