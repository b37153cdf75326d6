"""condor_hold: hold jobs, so they do not start until condor_release. A proc that runs is
vacated and held, as HTCondor's is: Drover requeues it (its attempt is stopped: SIGTERM, the
node's grace, SIGKILL) and holds it as soon as it waits again; should the scheduler start it
again first, it is requeued again, until it waits held (its event log shows each eviction, then
the hold)."""

from __future__ import annotations

import sys
import time
from typing import Any

from drover.compat.htcondor.action import OPTIONS, run
from drover.compat.htcondor.common import HELD

RUNS = ("running", "suspended")
PATIENCE_S = 120.0
POLL_S = 0.005


def hold(client: Any, refs: list[str]) -> list[Any]:
    from drover.protocol.api import ActionResult

    results: list[Any] = []
    for ref in refs:
        job_text, _, index = ref.partition(".")
        info = client.job(int(job_text))
        running = [t for t in info.tasks if t.state in RUNS and (not index or t.index == int(index))]
        if not running:
            results += client.hold([ref])
            continue
        if not index and info.array is not None:  # the cluster's waiting procs, held as they are
            client.hold([ref])
        stop = [f"{job_text}.{t.index}" if info.array is not None else job_text for t in running]
        ok = all(_vacate_and_hold(client, one) for one in stop)
        results.append(ActionResult(ref=ref, ok=ok, message="held" if ok else "not held",
                                    kind="" if ok else "conflict"))
    return results


def _vacate_and_hold(client: Any, ref: str) -> bool:
    """Requeue the running proc and hold it once it waits (a hold of one whose job has not
    started yet stops it before it starts, held); a proc that ended meanwhile is not held."""
    job_text, _, index = ref.partition(".")
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        task = next((t for t in client.job(int(job_text)).tasks if not index or t.index == int(index)), None)
        if task is None:
            return False
        if task.state == "held":
            return True
        if task.state in ("pending", "dispatched"):
            if client.hold([ref])[0].ok:
                return True
        elif task.state in RUNS:
            client.requeue([ref])
        elif task.state != "completing":
            return False  # it ended
        time.sleep(POLL_S)
    return False


def main(argv: list[str] | None = None) -> int:
    return run("condor_hold", list(sys.argv[1:] if argv is None else argv), OPTIONS, "hold", hold,
               lambda ad: ad["JobStatus"] != HELD)


if __name__ == "__main__":
    raise SystemExit(main())
