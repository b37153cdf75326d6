"""A queue's time limits (`[queues.NAME] default_time_s`, `max_time_s`), as a user meets them:
a job that names no limit is killed at the queue's default, one that asks for more than its
maximum is refused at once with the queue's key, and nothing of it is kept."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster

CONFIG = "[queues.short]\ndefault_time_s = 1\nmax_time_s = 60\n"


def test_a_queues_default_and_maximum_time_limit() -> None:
    cluster = LocalCluster(config_toml=CONFIG)
    try:
        cluster.start()
        job = cluster.submit("--queue", "short", "--", "sleep", "30")
        assert cluster.drover_json("show", str(job))["time_limit_s"] == 1
        cluster.drover("wait", str(job), check=False, timeout=60)
        (task,) = cluster.drover_json("show", str(job))["tasks"]
        assert task["state"] == "timeout" or task["attempts"][-1]["timed_out"], task
        refused = cluster.drover("submit", "--queue", "short", "--time", "2:00", "--", "true", check=False)
        assert refused.returncode != 0
        assert "over queue short's limit of 01:00 (its max_time_s)" in refused.stderr, refused.stderr
        assert [j["id"] for j in cluster.drover_json("status", "--all")] == [job]  # nothing of it was kept
    finally:
        assert not cluster.stop()
