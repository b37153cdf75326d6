"""bpeek: a running job's output so far, as IBM Spectrum LSF's bpeek shows it (`<< output from
stdout >>`, then the output); -f follows it until the job ends. Without a job id, the user's
newest running job (-J of that name, -q in that queue)."""

from __future__ import annotations

import fnmatch
import sys
import time

from drover.compat.lsf.common import EXIT_FAILURE, parse_ref, run, user_name
from drover.compat.lsf.syntax import Given, LsfUsageError, value
from drover.compat.optiontable import Arity, Mark, Option
from drover.core.errors import NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client

OPTIONS = [
    Option(("-f",), Arity.NONE, Mark.SUPPORTED, "follow the output until the job ends"),
    Option(("-J",), Arity.REQUIRED, Mark.SUPPORTED, "the user's newest running job of this name", "job_name"),
    Option(("-q",), Arity.REQUIRED, Mark.SUPPORTED, "the user's newest running job in this queue", "queue_name"),
    Option(("-m",), Arity.REQUIRED, Mark.SUPPORTED, "the user's newest job running on this host", "host_name"),
    Option(("-h",), Arity.NONE, Mark.SUPPORTED, "print the usage"),
    Option(("-V",), Arity.NONE, Mark.SUPPORTED, "print Drover's version, as LSF's release"),
]
USAGE = 'Usage: bpeek [-h] [-V] [-f] [-q queue_name | -m host_name | -J job_name | job_ID | "job_ID[index]"]'
RUNNING = ("dispatched", "running", "suspended", "completing")


def main(argv: list[str] | None = None) -> int:
    return run("bpeek", argv, OPTIONS, USAGE, _act, _check, timeout=False)


def _check(given: list[Given], operands: list[str]) -> None:
    if len(operands) > 1:
        raise LsfUsageError("bpeek: only one job may be given")


def _act(client: Client, given: list[Given], operands: list[str]) -> int:
    return _peek(client, operands[0] if operands else None, given, any(g.key == "f" for g in given))


def _peek(client: Client, word: str | None, given: list[Given], follow: bool) -> int:
    if word is None:
        name, queue, host = value(given, "J"), value(given, "q"), value(given, "m")
        mine = [job for job in client.jobs(user=user_name()) if job.state in RUNNING
                and (not name or fnmatch.fnmatchcase(job.name, name))
                and (not queue or job.queue == ("default" if queue == "normal" else queue))]
        if host:
            mine = [job for job in mine if any(a.node == host for t in client.job(job.id).tasks for a in t.attempts)]
        if not mine:
            print("No unfinished job found", file=sys.stderr)
            return EXIT_FAILURE
        word = str(max(job.id for job in mine))
    ref = parse_ref(word)
    if ref is None:
        print(f"{word}: Illegal job ID.", file=sys.stderr)
        return EXIT_FAILURE
    try:
        job = client.job(ref[0])
    except NotFound:
        print(f"Job <{word}>: No matching job found", file=sys.stderr)
        return EXIT_FAILURE
    task = next((t for t in job.tasks if ref[1] is None or t.index == ref[1]), None)
    if task is None or task.state in ("pending", "held") or not task.attempts:
        print(f"Job <{word}> : Not dispatched yet", file=sys.stderr)
        return EXIT_FAILURE
    if task.state not in RUNNING and not follow:
        print(f"Job <{word}> : Job has already finished", file=sys.stderr)
        return EXIT_FAILURE
    print("<< output from stdout >>", flush=True)
    offset = 0
    while True:
        chunk = client.output(job.id, task.index, "stdout", offset)
        if chunk.data:
            sys.stdout.buffer.write(chunk.data)
            sys.stdout.flush()
            offset += len(chunk.data)
            continue
        if not follow:
            return 0
        current = client.job(job.id)
        if not any(t.index == task.index and t.state in RUNNING for t in current.tasks):
            final = client.output(job.id, task.index, "stdout", offset)
            sys.stdout.buffer.write(final.data)
            return 0
        time.sleep(1)


if __name__ == "__main__":
    raise SystemExit(main())
