"""jobd's life of a queued job (seeds/jobd-life-of-a-queued-job.txt), as `drover submit` does it:
many jobs in one script, --zap, --done-output, --mail-output, and a queue's mail_finished."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster

MANY = """#!/bin/bash
#DROVER --name many --time 10m
echo "one $DROVER_JOB_NAME"
#NEXT
#DROVER --name second
echo "two $DROVER_JOB_NAME"
#NEXTSCRIPT
echo three
"""


def test_jobd_next_script_submits_one_job_per_part(cluster: LocalCluster) -> None:
    """jobd: "it is possible for a user to submit many jobs in one script file (each job is
    separated by the line "#NEXT" or "#NEXTSCRIPT" in the script file)".

    1. a script of three parts, the file's #DROVER lines at its top, the second part with one
       of its own; 2. `drover submit` says three jobs were submitted, with ids in the file's
       order; 3. each job ran its own part, with the file's options and its own."""
    (cluster.workdir / "many.sh").write_text(MANY)
    said = cluster.drover("submit", "many.sh").stdout.strip()
    first = int(said.removeprefix("Submitted 3 jobs: ").split("-")[0])
    assert said == f"Submitted 3 jobs: {first}-{first + 2}"
    ids = [first, first + 1, first + 2]
    assert cluster.drover("wait", *map(str, ids)).returncode == 0
    shown = [cluster.drover_json("show", str(job)) for job in ids]
    assert [job["name"] for job in shown] == ["many", "second", "many"]
    assert all(job["time_limit_s"] == 600 and job["queue"] == "default" for job in shown)
    outputs = [(cluster.workdir / f"drover-{job}.out").read_text() for job in ids]
    assert outputs == ["one many\n", "two second\n", "three\n"]


def test_jobd_next_script_is_one_request_a_bad_part_submits_none(cluster: LocalCluster) -> None:
    (cluster.workdir / "bad.sh").write_text("echo one\n#NEXT\necho two\n#NEXT\n#DROVER --bogus\necho three\n")
    refused = cluster.drover("submit", "bad.sh", check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == "drover submit: bad.sh: line 5: #DROVER --bogus: not an option of drover submit"
    (cluster.workdir / "queues.sh").write_text("echo one\n#NEXT\n#DROVER -q other\necho two\n")
    refused = cluster.drover("submit", "queues.sh", check=False)
    assert refused.returncode == 1
    assert "queues.sh: line 3: the jobs of one script go into one queue" in refused.stderr
    assert cluster.drover_json("status", "--all") == []
