"""drover priority and drover show: a pending job's multifactor priority, factor by factor."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster


def test_priority_lists_pending_jobs_with_their_factors(cluster: LocalCluster) -> None:
    later = cluster.submit("--begin", "now+1hour", "--priority", "-5", "--", "true")
    listed = cluster.drover_json("priority")
    (row,) = [r for r in listed["jobs"] if r["job_id"] == later]
    assert row["job"] == -5 and row["total"] == -5 and row["queue"] == "default"
    assert listed["weights"]["job"] == 1 and listed["weights"]["age"] == 0
    text = cluster.drover("priority").stdout
    assert "FAIRSHARE" in text and str(later) in text
    assert "multifactor -5.00" in cluster.drover("show", str(later)).stdout
    cluster.drover("cancel", str(later))
