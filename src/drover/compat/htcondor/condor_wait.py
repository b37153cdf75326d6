"""condor_wait: watch a job event log until every job in it (or the job named, or -num of them)
has ended, as HTCondor's does: a job ends with its termination (005) or abort (009) event.
Exits 0 with `All jobs done.`; 1 with `Time expired.` after -wait seconds."""

from __future__ import annotations

import re
import sys
import time

from drover.compat.htcondor import eventlog
from drover.compat.htcondor.common import CondorUsageError, last, parse
from drover.compat.optiontable import Arity, Mark, Option

OPTIONS = [
    Option(("-debug",), Arity.NONE, Mark.SUPPORTED, "as -status"),
    Option(("-echo",), Arity.NONE, Mark.SUPPORTED, "print each event of the job(s) waited for"),
    Option(("-help",), Arity.NONE, Mark.SUPPORTED, "the usage"),
    Option(("-num",), Arity.REQUIRED, Mark.SUPPORTED, "wait for this many jobs to end", "number"),
    Option(("-status",), Arity.NONE, Mark.SUPPORTED, "print each job's submission, start and end"),
    Option(("-wait",), Arity.REQUIRED, Mark.SUPPORTED, "give up after this many seconds", "seconds"),
]
USAGE = """
Use: condor_wait [options] <log-file> [job-number]
Where options are:
    -help             Display options
    -debug            Show extra debugging info
    -status           Show job start and terminate info
    -echo             Echo log events relevant to [job-number]
    -num <number>     Wait for this many jobs to end
                       (default is all jobs)
    -wait <seconds>   Wait no more than this time
                       (default is unlimited)
"""
POLL_S = 0.2
ENDS = (eventlog.TERMINATED, eventlog.ABORTED)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except CondorUsageError as error:
        print(str(error), file=sys.stderr)
        print(USAGE, file=sys.stderr)
        return error.status


def _main(argv: list[str]) -> int:
    given, operands = parse("condor_wait", argv, OPTIONS)
    if last(given, "help") is not None:
        print(USAGE, file=sys.stderr)
        return 0
    if not operands:
        raise CondorUsageError("")
    if len(operands) > 2:
        raise CondorUsageError(f"Extra argument: {operands[2]}\n")
    path = operands[0]
    wanted: tuple[int, int | None] | None = None
    if len(operands) == 2:
        match = re.fullmatch(r"(\d+)(?:\.(\d+)(?:\.\d+)?)?", operands[1])
        if match is None:
            print(f"Couldn't understand job number: {operands[1]}", file=sys.stderr)
            return 1
        wanted = int(match.group(1)), int(match.group(2)) if match.group(2) is not None else None
    minimum = _number(last(given, "num"), "-num must be greater than zero", positive=True)
    limit = _number(last(given, "wait"), "-wait requires an argument", positive=False)
    status = last(given, "status") is not None or last(given, "debug") is not None
    echo = last(given, "echo") is not None
    stop = time.monotonic() + limit if limit is not None else None
    try:
        file = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115  # read as it grows
    except OSError as error:
        print(f"Couldn't open {path}: {error.strerror}", file=sys.stderr)
        return 1
    with file:
        return _follow(file, wanted, minimum, stop, status, echo)


def _number(given: object, message: str, positive: bool) -> int | None:
    if given is None:
        return None
    text = getattr(given, "value", "") or ""
    if not re.fullmatch(r"\d+", text) or (positive and int(text) <= 0):
        raise CondorUsageError(message)
    return int(text)


def _follow(file: object, wanted: tuple[int, int | None] | None, minimum: int | None, stop: float | None,
            status: bool, echo: bool) -> int:
    submitted: set[tuple[int, int]] = set()
    ended: set[tuple[int, int]] = set()
    pending = ""
    while True:
        chunk = file.read()  # type: ignore[attr-defined]
        events, pending = eventlog.read_events(pending + chunk)
        for event in events:
            key = (event.cluster, event.proc)
            if wanted is not None and (event.cluster != wanted[0] or wanted[1] is not None and event.proc != wanted[1]):
                continue
            name = f"{event.cluster}.{event.proc}.0"
            if echo:
                print(f"{event.number:03d} ({event.cluster:03d}.{event.proc:03d}.000) {event.when} {event.text}\n...")
            if event.number == eventlog.SUBMIT:
                submitted.add(key)
                if status:
                    print(f"{name} submitted")
            elif event.number == eventlog.EXECUTE and status:
                host = event.text.split("host: ", 1)[-1].split("\n", 1)[0]
                print(f"{name} executing on host {host}")
            elif event.number in ENDS:
                submitted.add(key)
                ended.add(key)
                if status:
                    print(f"{name} {'completed' if event.number == eventlog.TERMINATED else 'aborted'}")
            if minimum is not None and len(ended) >= minimum:
                print(f"Specifed number of jobs ({minimum}) done.")
                return 0
        if not chunk:
            if submitted and submitted <= ended and minimum is None:
                print("All jobs done.")
                return 0
            if not submitted and not pending:
                print("This log does not mention that job!" if wanted else "This log does not mention any jobs!",
                      file=sys.stderr)
                return 1
            if stop is not None and time.monotonic() >= stop:
                print("Time expired.")
                return 1
            time.sleep(POLL_S)
        sys.stdout.flush()


if __name__ == "__main__":
    raise SystemExit(main())
