"""Jobs' scripts are kept in the store, not in the controller's memory: 1,000 held jobs with
4 MiB scripts each (4 GiB in all, submitted through the API as users submit) leave the
controller's resident memory under 200 MB, and so does a restart with them stored; the jobs
still run with their own scripts when released."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.wait import wait_until

from drover.protocol.api import JobSubmission

pytestmark = pytest.mark.timeout(1200)  # 4 GiB written to the store on a small, shared machine

JOBS = 1000
SCRIPT_BYTES = 4 * 1024 * 1024
PER_REQUEST = 7  # 28 MiB: within one request's 32 MiB
LIMIT_MB = 200


def _script(n: int) -> str:
    head = f"#!/bin/sh\necho job {n} ran\n#"
    return head + "x" * (SCRIPT_BYTES - len(head) - 1) + "\n"


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for process {pid}")


@pytest.fixture
def roomy(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """A cluster whose users may keep 8 GiB of scripts (the default is 1 GiB)."""
    yield from serve(request, LocalCluster(config_toml="[controller]\nmax_job_bytes_per_user = 8589934592\n"))


def test_a_thousand_held_jobs_with_4_mib_scripts_stay_out_of_the_controllers_memory(roomy: LocalCluster) -> None:
    client = roomy.client()
    began = time.monotonic()
    ids: list[int] = []
    for first in range(0, JOBS, PER_REQUEST):
        ids += client.submit([JobSubmission(script=_script(n), name=f"big{n}", workdir=str(roomy.workdir), hold=True)
                              for n in range(first, min(first + PER_REQUEST, JOBS))])
    took = time.monotonic() - began
    assert roomy.controller is not None
    submitted = _rss_mb(roomy.controller.pid)
    print(f"{JOBS} jobs of {SCRIPT_BYTES >> 20} MiB submitted in {took:.0f} s; the controller's VmRSS: "
          f"{submitted:.0f} MB")
    assert submitted < LIMIT_MB
    assert sum(job.state == "held" for job in client.jobs(limit=JOBS)) == JOBS

    roomy.controller.send_signal(signal.SIGTERM)
    roomy.controller.wait(timeout=60)
    roomy.controller = None
    roomy.start_controller()
    roomy.wait_node_up()  # its working set loaded and a planner pass over it done
    restarted = _rss_mb(roomy.controller.pid)
    print(f"after a restart: {restarted:.0f} MB")
    assert restarted < LIMIT_MB

    chosen = {ids[0]: 0, ids[JOBS // 2]: JOBS // 2, ids[-1]: JOBS - 1}
    client = roomy.client()
    client.release([str(job_id) for job_id in chosen])
    wait_until(lambda: all(client.job(job_id).state == "completed" for job_id in chosen), timeout=120,
               describe="the released jobs to complete")
    for job_id, n in chosen.items():
        assert (roomy.workdir / f"drover-{job_id}.out").read_text() == f"job {n} ran\n"
    assert _rss_mb(roomy.controller.pid) < LIMIT_MB
