"""Two clusters on one host (two users' personal clusters, or a personal one beside the shared
one) each have a job 1. What identifies an attempt to the kernel carries the cluster's name, so
cancelling job 1 of one cluster leaves job 1 of the other running, and each leaves no cgroup."""

from __future__ import annotations

import glob
import os

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

from drover.config import Paths, cluster_tag


def _job_cgroups(tag: str) -> list[str]:
    """The attempt cgroups of the cluster named `tag`, in any hierarchy (v1 and v2); not its
    slots' cpusets, kept between attempts (shepherd/containment/slots.py)."""
    return [path for path in glob.glob(f"/sys/fs/cgroup/**/drover-{tag}/*", recursive=True)
            if os.path.isdir(path) and not os.path.basename(path).startswith("slot-")]


def test_cancelling_job_1_of_one_cluster_leaves_job_1_of_the_other_running() -> None:
    first, second = LocalCluster(), LocalCluster()
    try:
        first.start()
        second.start()
        tags = [cluster_tag(Paths(str(c.state_dir))) for c in (first, second)]
        assert tags[0] != tags[1]
        marker = "side-by-side"
        jobs = [c.submit("--", "bash", "-c", f"echo {marker} > started; sleep 300") for c in (first, second)]
        assert jobs == [1, 1]
        for c in (first, second):
            wait_until(lambda c=c: (c.workdir / "started").exists(), describe="the job to start")
        # Where cgroups are writable (always, on these test machines), each job has its own.
        contained = [bool(_job_cgroups(tag)) for tag in tags]
        assert contained[0] == contained[1]
        assert first.drover("cancel", "1").returncode == 0
        assert first.drover("wait", "1", check=False).returncode != 0
        assert first.drover_json("show", "1")["state"] == "cancelled"
        shown = second.drover_json("show", "1")
        assert shown["state"] == "running", shown
        wait_until(lambda: not _job_cgroups(tags[0]), describe="the cancelled attempt's cgroup to go")
        assert bool(_job_cgroups(tags[1])) == contained[1]  # untouched by the other's cancel
        assert second.drover("cancel", "1").returncode == 0
        second.drover("wait", "1", check=False)
        wait_until(lambda: not _job_cgroups(tags[1]), describe="the second attempt's cgroup to go")
    finally:
        problems = first.stop() + second.stop()
    assert not problems, problems
