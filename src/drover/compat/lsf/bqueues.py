"""bqueues: the cluster's queues as IBM Spectrum LSF's bqueues lists them (Drover's default queue
is `normal`): priority, status, limits, and their jobs by state; -l the long form, -w wide."""

from __future__ import annotations

import sys

from drover.compat.lsf.common import EXIT_FAILURE, drover_queue, queue_name, run
from drover.compat.lsf.syntax import approximate
from drover.compat.optiontable import Arity, Mark, Option

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.compat.lsf.syntax import Given
    from drover.protocol.api import JobInfo, QueueInfo

OPTIONS = [
    Option(("-l",), Arity.NONE, Mark.SUPPORTED, "the long form: the queue's parameters and limits"),
    Option(("-w",), Arity.NONE, Mark.SUPPORTED, "wide: names are not cut"),
    Option(("-u",), Arity.REQUIRED, Mark.APPROXIMATED, "every queue is listed: any user may use each",
           "user_name"),
    Option(("-m",), Arity.REQUIRED, Mark.SUPPORTED, "the queues that may use this host", "host_name"),
    Option(("-h",), Arity.NONE, Mark.SUPPORTED, "print the usage"),
    Option(("-V",), Arity.NONE, Mark.SUPPORTED, "print Drover's version, as LSF's release"),
]
USAGE = "Usage: bqueues [-h] [-V] [-w | -l] [-m host_name] [-u user_name] [queue_name ...]"


def status(queue: QueueInfo) -> str:
    """Open takes jobs, Closed takes none; Active starts them, Inact does not (stopped, or out of
    its run window)."""
    opened = "Closed" if queue.state in ("draining", "inactive") else "Open"
    active = "Inact" if queue.state in ("stopped", "inactive") or not queue.window_open else "Active"
    return f"{opened}:{active}"


def _counts(queue: QueueInfo, jobs: list[JobInfo]) -> dict[str, int]:
    """Its unfinished jobs' tasks by LSF's state: PEND, RUN, SUSP (USUSP, SSUSP, and PSUSP: held)."""
    mine = [job for job in jobs if job.queue == queue.name]

    def count(*states: str) -> int:
        return sum(job.task_counts.get(state, 0) for job in mine for state in states)

    pending, held = count("pending"), count("held")
    running, suspended = count("dispatched", "running", "completing"), count("suspended")
    return {"NJOBS": pending + held + running + suspended, "PEND": pending, "RUN": running, "SUSP": suspended + held,
            "USUSP": suspended}


def main(argv: list[str] | None = None) -> int:
    return run("bqueues", argv, OPTIONS, USAGE, _show, lambda given, operands: approximate("bqueues", given))


def _show(client: Client, given: list[Given], operands: list[str]) -> int:
    keys = {g.key for g in given}
    queues = client.queues()
    jobs = client.jobs(user=None)
    status_code = 0
    known = {q.name for q in queues}
    for name in operands:
        if drover_queue(name) not in known:
            print(f"{name}: No such queue", file=sys.stderr)
            status_code = EXIT_FAILURE
    wanted = {drover_queue(name) for name in operands}
    host = next((g.value for g in given if g.key == "m"), None)
    shown = [q for q in queues if (not wanted or q.name in wanted)
             and (host is None or q.nodes is None or host in q.node_names)]
    if "l" in keys:
        for queue in shown:
            _long(queue, _counts(queue, jobs))
        return status_code
    if shown:
        wide = "w" in keys
        print(f"{'QUEUE_NAME':<15} {'PRIO':>4} {'STATUS':<15} {'MAX':>4} {'JL/U':>4} {'JL/P':>4} {'JL/H':>4} "
              f"{'NJOBS':>5} {'PEND':>5} {'RUN':>5} {'SUSP':>5}")
        for queue in shown:
            name = queue_name(queue.name)
            if not wide and len(name) > 15:
                name = name[:14] + "*"
            counts = _counts(queue, jobs)
            print(f"{name:<15} {queue.priority:>4} {status(queue):<15} {_limit(queue.max_running):>4} "
                  f"{_limit(queue.max_running_per_user):>4} {'-':>4} {'-':>4} {counts['NJOBS']:>5} "
                  f"{counts['PEND']:>5} {counts['RUN']:>5} {counts['SUSP']:>5}")
    return status_code


def _limit(number: int | None) -> str:
    return "-" if number is None else str(number)


def _long(queue: QueueInfo, counts: dict[str, int]) -> None:
    print(f"\nQUEUE: {queue_name(queue.name)}")
    print(f"  -- Defined in {queue.defined_in}.\n")
    print("PARAMETERS/STATISTICS")
    print("PRIO NICE STATUS          MAX JL/U JL/P JL/H NJOBS  PEND   RUN SSUSP USUSP  RSV")
    print(f"{queue.priority:>4} {queue.nice:>4}  {status(queue):<15}{_limit(queue.max_running):>4} "
          f"{_limit(queue.max_running_per_user):>4} {'-':>4} {'-':>4} {counts['NJOBS']:>5} {counts['PEND']:>5} "
          f"{counts['RUN']:>5} {0:>5} {counts['USUSP']:>5} {0:>4}")
    if queue.max_time_s or queue.default_time_s:
        print("\n RUNLIMIT")
        print(f" {(queue.max_time_s or queue.default_time_s or 0) / 60:.1f} min")
    if queue.max_memory_mib:
        print(f"\n MEMLIMIT\n {queue.max_memory_mib} M")
    print(f"\nUSERS: all users\nHOSTS:  {' '.join(queue.node_names) if queue.nodes is not None else 'all'}")
    if queue.reason:
        print(f"\n{queue.reason}")


if __name__ == "__main__":
    raise SystemExit(main())
