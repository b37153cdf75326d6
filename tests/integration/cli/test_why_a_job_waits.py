"""`drover why` and the NOTE of `drover status` for held jobs and jobs waiting on a dependency."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until


def test_why_says_who_holds_a_job_and_what_a_dependent_job_waits_for(cluster: LocalCluster) -> None:
    held = cluster.submit("--hold", "--name", "first", "--", "true")
    after = cluster.submit("--dependency", f"afterok:{held}", "--name", "second", "--", "true")
    wait_until(lambda: cluster.drover_json("show", str(after))["pending_reason"] == "dependency",
               describe="the dependent job's reason")

    why_held = cluster.drover("why", str(held)).stdout
    assert f"Job {held} (first) is HELD" in why_held
    assert f"held since it was submitted (submitted with --hold); release it with drover release {held}" in why_held
    why_after = cluster.drover("why", str(after)).stdout
    assert f"waiting for job {held}" in why_after
    assert f"it starts when job {held} completes successfully" in why_after
    status = {line.split()[0]: line for line in cluster.drover("status").stdout.splitlines()[1:]}
    assert f"release with drover release {held}" in status[str(held)]
    assert f"waiting for job {held}" in status[str(after)]

    cluster.drover("hold", str(after))
    owner = cluster.drover_json("show", str(after))["owner"]
    assert f"held by {owner} (drover hold); release it with drover release {after}" in cluster.drover(
        "why", str(after)).stdout
    cluster.drover("release", str(after))
    cluster.drover("release", str(held))
    assert cluster.drover("wait", str(held), str(after)).returncode == 0
    assert "it has ended, exit status 0; nothing waits" in cluster.drover("why", str(after)).stdout
