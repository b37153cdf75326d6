"""qalter: change jobs that wait. Drover changes their priority (-p), their queue (-q) and their
user hold (-h); qsub's other options are refused with a clear error, never silently dropped."""

from __future__ import annotations

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.pbs.common import drover_queue
from drover.compat.pbs.jobaction import run
from drover.compat.pbs.submit_options import QSUB_OPTIONS
from drover.compat.pbs.syntax import Given, PbsUsageError, last

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import ActionResult

CHANGEABLE = {"p": "the priority, -1024 to 1023", "q": "the queue the job waits in",
              "h": "`u` puts a user hold on the job, `n` takes it off"}
OPTIONS = [Option(o.names, o.arity, Mark.SUPPORTED, CHANGEABLE[o.key], o.metavar) if o.key in CHANGEABLE else
           Option(o.names, o.arity, Mark.REFUSED, "Drover changes -p, -q and -h of a job that waits", o.metavar)
           for o in QSUB_OPTIONS if o.key not in ("version", "I", "z", "F", "C", "f", "X")]
# qalter's -h takes a hold list, unlike qsub's flag.
OPTIONS = [Option(("-h",), Arity.REQUIRED, o.mark, o.note, "hold_list") if o.key == "h" else o for o in OPTIONS]
USAGE = "usage: qalter [-a date_time] [-A account_string] [-c interval] [-e path] [-h hold_list]\n" \
        "\t[-j y|n] [-k keep] [-l resource_list] [-m mail_options] [-M user_list] [-N jobname]\n" \
        "\t[-o path] [-p priority] [-q queue] [-r y|n] [-S path] [-u user_list] [-W dependency_list]\n" \
        "\tjob_identifier..."


def _check(given: list[Given]) -> None:
    for g in given:
        if g.option.mark is Mark.REFUSED:
            raise PbsUsageError(f"qalter: {g.option.names[0]}: {g.option.note}", 1, usage=False)
    priority = last(given, "p")
    if priority is not None:
        text = priority.value or ""
        if not (text.isascii() and text.lstrip("-").isdigit() and -1024 <= int(text) <= 1023):
            raise PbsUsageError("qalter: illegal -p value", 1, usage=False)
    hold = last(given, "h")
    if hold is not None and hold.value not in ("u", "n"):
        raise PbsUsageError(f"qalter: -h {hold.value}: Drover has user holds only (-h u, -h n)", 1, usage=False)
    if not given:
        raise PbsUsageError("qalter: no attribute to change (Drover changes -p, -q and -h)", 1, usage=False)


def _act(client: Client, refs: list[str], given: list[Given]) -> list[ActionResult]:
    results: list[ActionResult] = []
    priority, queue, hold = last(given, "p"), last(given, "q"), last(given, "h")
    if priority is not None:
        results += client.alter(refs, priority=int(priority.value or 0))
    if queue is not None:
        results += client.alter(refs, queue=drover_queue(queue.value or ""))
    if hold is not None:
        results += client.hold(refs) if hold.value == "u" else client.release(refs)
    return results


def main(argv: list[str] | None = None) -> int:
    return run("qalter", argv, OPTIONS, USAGE, _act, _check)


if __name__ == "__main__":
    raise SystemExit(main())
