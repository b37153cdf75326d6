"""scontrol requeuehold holds a requeued job once it waits again, and says so in Slurm's words
when it started again first; on plain data, with a client that plays the cluster."""

from __future__ import annotations

from drover.compat.slurm.scontrol import hold_when_stopped
from drover.protocol.api import ActionResult, AttemptInfo, JobInfo, TaskInfo


class Cluster:
    """A job whose running attempt stops after `stopping` hold requests, then either waits
    (the hold lands) or starts a second attempt at once (the hold comes too late)."""

    def __init__(self, stopping: int, restarts: bool) -> None:
        self.stopping, self.restarts, self.asked = stopping, restarts, 0
        self.state, self.attempts = "running", 1

    def hold(self, refs: list[str]) -> list[ActionResult]:
        self.asked += 1
        if self.asked > self.stopping and self.state == "running" and self.attempts == 1:
            self.state, self.attempts = ("running", 2) if self.restarts else ("pending", 1)
        ok = self.state == "pending"
        if ok:
            self.state = "held"
        return [ActionResult(ref=ref, ok=ok, message="job 5 has no pending task to hold") for ref in refs]

    def job(self, job_id: int) -> JobInfo:
        attempts = [AttemptInfo(number=n, node="n1", cpu_ids=[0], dispatched_at=0.0) for n in range(1, self.attempts + 1)]
        return JobInfo(id=job_id, name="j", owner="u", state=self.state, submitted_at=0.0, priority=0, cpus=1,
                       memory_mib=0, time_limit_s=None, array=None, task_counts={self.state: 1}, workdir="/",
                       output="o", error=None, tasks=[TaskInfo(index=0, state=self.state, state_since=0.0,
                                                               attempts=attempts)])


def test_the_hold_lands_once_the_job_waits() -> None:
    cluster = Cluster(stopping=3, restarts=False)
    assert hold_when_stopped(cluster, ["5"], {"5": "5"}, {"5": 1}) == []  # a stand-in for Client
    assert cluster.state == "held" and cluster.asked == 4


def test_a_job_that_started_again_first_is_refused() -> None:
    cluster = Cluster(stopping=2, restarts=True)
    (refusal,) = hold_when_stopped(cluster, ["5"], {"5": "5"}, {"5": 1})  # a stand-in for Client
    assert (refusal.slurm_id, refusal.reason) == ("5", "Job is no longer pending execution")


def test_a_job_that_started_again_before_the_first_look_is_refused() -> None:
    cluster = Cluster(stopping=0, restarts=True)
    cluster.hold(["5"])  # the requeued job is already running its second attempt
    (refusal,) = hold_when_stopped(cluster, ["5"], {"5": "5"}, {"5": 1}, patience_s=5)  # a stand-in for Client
    assert refusal.reason == "Job is no longer pending execution"


def test_it_gives_up_after_its_patience() -> None:
    cluster = Cluster(stopping=10**9, restarts=False)
    (refusal,) = hold_when_stopped(cluster, ["5"], {"5": "5"}, {"5": 1}, patience_s=0.2)  # a stand-in for Client
    assert refusal.reason == "Job is no longer pending execution"
