"""Accounting on a personal cluster with two queues: a few jobs run in each, and `drover history
--by queue --json`, its filters, `qacct -o` and `sacct -s` agree with the records."""

from __future__ import annotations

import csv
import getpass
import io
import json
from collections.abc import Iterator

import pytest
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.compat_install import install, run

CONFIG = """[queues.q2]
priority = 1
"""


@pytest.fixture
def two_queues(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    yield from serve(request, LocalCluster(config_toml=CONFIG))


def test_history_summaries_and_the_front_ends_agree_with_the_records(two_queues: LocalCluster) -> None:
    cluster = two_queues
    me = getpass.getuser()
    ran = {
        "default": [cluster.submit("--name", "acct-a", "--", "true"),
                    cluster.submit("--name", "acct-b", "--", "sh", "-c", "exit 3")],
        "q2": [cluster.submit("--queue", "q2", "--name", "acct-c", "--", "sleep", "0.2") for _ in range(3)],
    }
    cluster.drover("wait", *(str(job) for jobs in ran.values() for job in jobs), check=False)

    records = cluster.drover_json("history", "-n", "100")
    assert sorted(r["job_id"] for r in records) == sorted(job for jobs in ran.values() for job in jobs)
    for record in records:
        assert record["owner"] == me and record["group"] and record["queue"] in ran
        assert record["job_id"] in ran[record["queue"]]
        assert record["wait_s"] is not None and record["wall_s"] is not None and record["cpus"] == 1
        assert record["eligible_at"] >= record["submitted_at"] and record["started_at"] >= record["eligible_at"]
    failed = [r for r in records if r["state"] == "failed"]
    assert [(r["job_id"], r["exit_code"], r["reason"]) for r in failed] == [(ran["default"][1], 3, "NonZeroExitCode")]

    summary = cluster.drover_json("history", "--by", "queue")
    assert summary["by"] == "queue"
    by_queue = {group["key"]: group for group in summary["groups"]}
    assert set(by_queue) == {"default", "q2"}
    for queue, jobs in ran.items():
        mine = [r for r in records if r["queue"] == queue]
        assert (by_queue[queue]["jobs"], by_queue[queue]["attempts"]) == (len(jobs), len(mine))
        wall_hours = sum(r["wall_s"] for r in mine) / 3600
        assert by_queue[queue]["wall_hours"] == pytest.approx(wall_hours, rel=1e-6, abs=1e-9)
        assert by_queue[queue]["wait_p50_s"] is not None

    # The filters the controller applies
    q2_rows = cluster.drover_json("history", "--queue", "q2", "--since", "-1d")
    assert sorted(r["job_id"] for r in q2_rows) == sorted(ran["q2"])
    assert [r["job_id"] for r in cluster.drover_json("history", "--state", "failed")] == [ran["default"][1]]
    assert [r["job_id"] for r in cluster.drover_json("history", "--name", "acct-[ab]")] == ran["default"]
    assert cluster.drover_json("history", "--until", "-1d") == []
    by_day = cluster.drover_json("history", "--by", "day", "--user", me)
    assert sum(group["attempts"] for group in by_day["groups"]) == len(records)
    text = cluster.drover("history", "--by", "user", "--csv").stdout
    (row,) = list(csv.DictReader(io.StringIO(text)))
    assert (row["user"], int(row["jobs"])) == (me, 5)

    # The front ends read the same records
    bin_dir = install(cluster)
    qacct = run(cluster, bin_dir, "qacct", "-o", me).stdout.splitlines()
    assert qacct[0].startswith("OWNER") and "WALLCLOCK" in qacct[0]
    owner, wallclock, utime, stime, cpu = qacct[2].split()[:5]
    assert owner == me
    assert float(wallclock) == pytest.approx(sum(r["wall_s"] for r in records), abs=1)
    assert float(utime) == pytest.approx(sum(r["cpu_user_s"] or 0 for r in records), abs=0.01)
    assert float(cpu) == pytest.approx(float(utime) + float(stime), abs=0.01)
    per_queue = run(cluster, bin_dir, "qacct", "-q").stdout.splitlines()
    assert per_queue[0].startswith("CLUSTER QUEUE") and sorted(line.split()[0] for line in per_queue[2:]) == [
        "all.q", "q2"]
    sacct = run(cluster, bin_dir, "sacct", "-X", "-n", "-P", "-s", "F", "-S", "now-1hour", "-E", "now", "-o", "jobid,state,exitcode")
    assert sacct.stdout.split() == [f"{ran['default'][1]}|FAILED|3:0"], sacct.stderr
    assert json.loads(json.dumps(summary)) == summary
