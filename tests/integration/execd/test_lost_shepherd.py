"""A shepherd killed outright (SIGKILL, as root) while its job and the job's escapees run: the
execd ends everything in the attempt's containment, removes its cgroups, and reports a system
failure. The job runs again as a new attempt (which completes), and attempt 1's record says the
shepherd died; with --no-requeue the job fails with that reason. The same when the shepherd dies
while the execd is down. Each containment backend this host can run is tested.

The subreaper backend has no cgroup: the execd ends the shepherd's session, so a process that
left it (setsid) and was orphaned when the shepherd died is out of its reach; the test checks
the others and names that one."""

from __future__ import annotations

import os
import signal
import uuid

from tests.helpers.attempts import (
    attempt_cgroups,
    backend_cluster,  # noqa: F401  (a fixture)
    escaping_lines,
    kill_all,
    processes_with_argument,
    shepherd_pid,
)
from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

# Attempt 1 starts escapees and waits; any later attempt completes at once.
SCRIPT = """
if [ "$DROVER_ATTEMPT" != 1 ]; then echo "attempt $DROVER_ATTEMPT" > later; exit 0; fi
{escapees}
touch ready
sleep 300
"""


def _marker() -> str:
    return f"{5000 + uuid.uuid4().int % 1000}.{os.getpid()}"


def _start(cluster: LocalCluster, marker: str, *options: str) -> tuple[int, int]:
    """Submit the job; once attempt 1 runs with its escapees: (job id, shepherd pid)."""
    job = cluster.submit(*options, "--", "bash", "-c", SCRIPT.format(escapees=escaping_lines(marker)))
    wait_until(lambda: (cluster.workdir / "ready").exists(), describe="attempt 1 to be ready")
    # `ready` is touched once the escapees are forked, not once each has become `sleep`
    wait_until(lambda: len(processes_with_argument(marker)) == 3, describe="the three escapees running")
    return job, shepherd_pid(cluster, f"{job}.0.1")


def _check_attempt_1_ended_everything(cluster: LocalCluster, backend: str, marker: str) -> None:
    def in_reach() -> list[str]:
        return [" ".join(p.cmdline()) for p in processes_with_argument(marker)
                if not (backend == "subreaper" and os.getsid(p.pid) == p.pid)]

    wait_until(lambda: not in_reach(), describe="no process of attempt 1 left")
    # The execd removes the cgroups after the last process is gone: a moment later.
    wait_until(lambda: not [path for path in attempt_cgroups(cluster) if path.endswith(".0.1")],
               describe="attempt 1's cgroups to be removed")
    if backend == "subreaper":  # the limit of a containment without cgroups: the setsid escapee
        assert len(processes_with_argument(marker)) == 1
        kill_all(processes_with_argument(marker))


def _check_requeued(cluster: LocalCluster, job: int, died: str) -> None:
    cluster.drover("wait", str(job), timeout=60)
    shown = cluster.drover_json("show", str(job))
    assert shown["state"] == "completed", shown
    attempts = shown["tasks"][0]["attempts"] if "tasks" in shown else shown["attempts"]
    assert [a["number"] for a in attempts] == [1, 2]
    assert attempts[0]["failure"] == died, attempts[0]
    assert (cluster.workdir / "later").read_text() == "attempt 2\n"
    assert attempt_cgroups(cluster) == []


def test_a_shepherd_killed_outright_ends_its_attempt_and_the_job_runs_again(
        backend_cluster: tuple[LocalCluster, str]) -> None:  # noqa: F811
    cluster, backend = backend_cluster
    marker = _marker()
    try:
        job, shepherd = _start(cluster, marker)
        os.kill(shepherd, signal.SIGKILL)
        _check_attempt_1_ended_everything(cluster, backend, marker)
        _check_requeued(cluster, job, "the shepherd died (signal 9) before recording how the job ended")
    finally:
        kill_all(processes_with_argument(marker))


def test_a_job_that_may_not_run_again_fails_with_the_reason(backend_cluster: tuple[LocalCluster, str]) -> None:  # noqa: F811
    cluster, backend = backend_cluster
    marker = _marker()
    try:
        job, shepherd = _start(cluster, marker, "--no-requeue")
        os.kill(shepherd, signal.SIGKILL)
        _check_attempt_1_ended_everything(cluster, backend, marker)
        assert cluster.drover("wait", str(job), check=False, timeout=60).returncode != 0
        shown = cluster.drover_json("show", str(job))
        assert shown["state"] == "failed", shown
        attempts = shown["tasks"][0]["attempts"] if "tasks" in shown else shown["attempts"]
        assert [a["failure"] for a in attempts] == ["the shepherd died (signal 9) before recording how the job ended"]
        assert not (cluster.workdir / "later").exists()
    finally:
        kill_all(processes_with_argument(marker))


def test_a_shepherd_that_died_while_the_execd_was_down(backend_cluster: tuple[LocalCluster, str]) -> None:  # noqa: F811
    cluster, backend = backend_cluster
    marker = _marker()
    try:
        job, shepherd = _start(cluster, marker)
        cluster.kill("execd")  # the execd and its fork server; the shepherd goes on
        os.kill(shepherd, signal.SIGKILL)
        cluster.start_execd(DROVER_CONTAINMENT=backend)
        _check_attempt_1_ended_everything(cluster, backend, marker)
        # No one was there to see how it died.
        _check_requeued(cluster, job, "the shepherd died before recording how the job ended")
    finally:
        kill_all(processes_with_argument(marker))
