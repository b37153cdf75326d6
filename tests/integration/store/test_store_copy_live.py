"""A personal cluster moved from SQLite to PostgreSQL while its jobs run, as docs/store.md says:
`drover down`, `drover store copy`, `[store] url` in drover.toml, `drover up`.

1. A cluster on SQLite (2 CPUs) with ended jobs (one completed, one failed), a job that runs on
   both CPUs until released, three jobs waiting for room, and a held job.
2. `drover down`: the running job goes on under its shepherd.
3. `drover store copy --from sqlite://... --to postgresql://...`: every table's row count and
   checksum printed, and equal on both sides.
4. drover.toml names the PostgreSQL store; `drover up`.
5. The running job, released, ends and is recorded once with its exit status; the waiting jobs
   run; the held one is still held, and runs once released; the ended ones are in `drover
   history`; the event log goes on from where it was, without a gap or a repeat.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.cluster import LocalCluster, log_tails
from tests.helpers.wait import wait_until

from drover.config import Paths, default_spool
from drover.spool import layout
from drover.spool.process import is_alive, read_pid_record


class PersonalCluster(LocalCluster):
    """A state directory for a cluster that `drover up` and `down` start and stop, as a user's:
    its node's spool is where `drover up` puts it."""

    @property
    def spool(self) -> Path:
        return Path(default_spool(Paths(str(self.state_dir))))


@pytest.fixture
def personal(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    cluster = PersonalCluster()
    try:
        yield cluster
    finally:
        report = getattr(request.node, "rep_call", None)
        if report is None or report.failed:
            print(log_tails(cluster.state_dir))
        cluster.drover("down", check=False)
        spool = cluster.spool
        cluster.stop()  # the jobs left in the spool killed, the cluster's cgroups removed
        shutil.rmtree(spool, ignore_errors=True)


def up(cluster: LocalCluster) -> None:
    cluster.drover("up", "--cpus", "2", "--memory", "4096", "--kill-grace", "1", timeout=90)


def state(cluster: LocalCluster, job: int) -> str:
    return str(cluster.drover_json("show", str(job))["state"])


def test_a_live_cluster_moves_from_sqlite_to_postgresql(postgres_url: str, personal: LocalCluster) -> None:
    # postgres_url first: its database is dropped after the cluster is down.
    cluster = personal
    up(cluster)
    completed = cluster.submit("--", "true")
    failed = cluster.submit("--", "sh", "-c", "exit 3")
    cluster.drover("wait", str(completed), str(failed), check=False)
    assert (state(cluster, completed), state(cluster, failed)) == ("completed", "failed")

    release = cluster.workdir / "go"
    # Both CPUs, until released (at most 30 s): it runs through the move.
    running = cluster.submit("-c", "2", "--", "sh", "-c",
                             f"for i in $(seq 300); do [ -e {release} ] && exit 7; sleep 0.1; done; exit 9")
    wait_until(lambda: state(cluster, running) == "running", describe="the job running")
    waiting = [cluster.submit("--", "sh", "-c", f"echo ran >> {cluster.workdir}/waiting-{n}") for n in range(3)]
    held = cluster.submit("--hold", "--", "sh", "-c", f"echo ran >> {cluster.workdir}/held")
    assert [state(cluster, job) for job in [*waiting, held]] == ["pending"] * 3 + ["held"]
    before = [event["seq"] for event in cluster.drover_json("events", "--limit", "100000")]
    assert before == list(range(1, len(before) + 1))

    cluster.drover("down")
    attempt = f"{running}.0.1"  # the running job's, its shepherd alive (a job is promised behind it)
    assert attempt in layout.attempt_names(str(cluster.spool))
    record = read_pid_record(layout.SpoolDir(str(cluster.spool), attempt).record(layout.PID))
    assert record is not None and is_alive(*record)
    assert not release.exists()

    database = Paths(str(cluster.state_dir)).database
    source = f"sqlite://{database}"
    copied = cluster.drover("store", "copy", "--from", source, "--to", postgres_url)
    assert "every table's rows and checksum agree" in copied.stdout, copied.stdout
    for table in ("jobs", "tasks", "attempts", "accounting", "events", "nodes", "submission_keys"):
        assert table in copied.stdout
    figures = json.loads(cluster.drover("store", "copy", "--from", source, "--to", postgres_url, "--force",
                                        "--json").stdout)
    assert figures["matches"]
    by_table = {row["table"]: row for row in figures["tables"]}
    for row in by_table.values():
        assert row["source_rows"] == row["target_rows"] and row["source_checksum"] == row["target_checksum"]
    # The events include those of the stop (the node's going).
    assert by_table["jobs"]["source_rows"] == 7 and by_table["events"]["source_rows"] > len(before)
    assert by_table["submission_keys"]["source_rows"] == 7  # each `drover submit` sent its key

    (cluster.state_dir / "drover.toml").write_text(f"[store]\nurl = {json.dumps(postgres_url)}\n")
    up(cluster)
    checked = cluster.drover_json("store", "check")
    assert checked["current"] and checked["counts"]["jobs"] == 7 and checked["store"].startswith("postgresql://")

    # The ended jobs are in the history, as they were.
    history = cluster.drover_json("history")
    ended = {(row["job_id"], row["state"], row["exit_status"]) for row in history}
    assert {(completed, "completed", 0), (failed, "failed", 3)} <= ended

    # The running job went on through the move: released now, its end is recorded once.
    assert state(cluster, running) == "running"
    release.touch()
    cluster.drover("wait", str(running), *map(str, waiting), check=False, timeout=90)
    shown = cluster.drover_json("show", str(running))
    assert shown["state"] == "failed" and shown["exit_status"] == 7
    assert len(shown["tasks"][0]["attempts"]) == 1
    for n, job in enumerate(waiting):
        assert state(cluster, job) == "completed"
        assert (cluster.workdir / f"waiting-{n}").read_text() == "ran\n"

    # The held job waited through it all; released, it runs once.
    assert state(cluster, held) == "held" and not (cluster.workdir / "held").exists()
    cluster.drover("release", str(held))
    cluster.drover("wait", str(held), timeout=60)
    assert state(cluster, held) == "completed" and (cluster.workdir / "held").read_text() == "ran\n"

    # The event log goes on from the copied one: numbered without a gap or a repeat; each job
    # ended once, each attempt's exit recorded once.
    events = cluster.drover_json("events", "--limit", "100000")
    seqs = [event["seq"] for event in events]
    assert seqs[:len(before)] == before and seqs == list(range(1, len(seqs) + 1))
    jobs = [completed, failed, running, *waiting, held]
    ended_once = Counter(event["job_id"] for event in events if event["kind"] == "job_ended")
    exits = Counter((event["job_id"], event["index"], event["attempt"]) for event in events
                    if event["kind"] == "exited")
    assert all(ended_once[job] == 1 for job in jobs), ended_once
    assert all(count == 1 for count in exits.values()) and {key[0] for key in exits} == set(jobs)
    history = cluster.drover_json("history", "--limit", "100")
    assert Counter(row["job_id"] for row in history) == Counter(jobs)  # one attempt each
