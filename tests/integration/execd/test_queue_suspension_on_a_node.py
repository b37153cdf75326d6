"""Queue suspension on a personal cluster, with real jobs (Grid Engine's qmod(1) -sq and -usq,
queue_conf(5); `drover queue suspend|unsuspend`): the queue's running job stops, a job of it
submitted meanwhile does not start, a resume of the job alone does not undo its queue's
suspension, and unsuspending the queue lets both go on; a job checkpointing on the `x` occasion
(checkpoint(5)) is migrated by its queue's suspension instead; and qmod -rq reschedules the jobs
running in a queue instance."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until
from tests.integration.execd.test_checkpoint_restart_migration import COUNTER

COUNTING = "while true; do echo x >> {file}; sleep 0.1; done"


def show(cluster: LocalCluster, job: int) -> dict[str, Any]:
    shown = cluster.drover_json("show", str(job))
    return shown[0] if isinstance(shown, list) else shown  # type: ignore[no-any-return]


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def counts(path: Path) -> bool:
    """Whether the job appends to `path` over half a second."""
    before = lines(path)
    time.sleep(0.5)
    return lines(path) > before


def test_gridengine_qmod_sq_suspends_the_jobs_of_a_queue_instance_and_starts_none(tmp_path: Path) -> None:
    cluster = LocalCluster(cpus=2)
    try:
        cluster.start()
        bin_dir = install(cluster)
        first_file, second_file = tmp_path / "first", tmp_path / "second"
        first = cluster.submit("--", "bash", "-c", COUNTING.format(file=first_file))
        wait_until(lambda: lines(first_file) >= 3, timeout=60, describe="the first job to count")
        node = cluster.drover_json("nodes")[0]["name"]

        suspended = run(cluster, bin_dir, "qmod", "-sq", "all.q")
        assert suspended.returncode == 0, suspended.stderr
        assert suspended.stdout.endswith(f'changed state of "all.q@{node}" (suspended)\n'), suspended.stdout
        wait_until(lambda: show(cluster, first)["tasks"][0]["state"] == "suspended", timeout=30,
                   describe="the first job suspended")
        assert not counts(first_file)
        second = cluster.submit("--", "bash", "-c", COUNTING.format(file=second_file))
        # the planner has looked at it, and says why it waits
        wait_until(lambda: f"queue default is suspended on {node}" in cluster.drover("show", str(second)).stdout,
                   describe="the second job waiting for its suspended queue")
        assert show(cluster, second)["state"] == "pending" and not second_file.exists()
        assert f"(suspended by its queue instance default@{node})" in cluster.drover("show", str(first)).stdout
        qstat = {line.split()[0]: line.split() for line in run(cluster, bin_dir, "qstat").stdout.splitlines()[2:]}
        assert qstat[str(first)][4] == "S"
        instances = [line.split() for line in run(cluster, bin_dir, "qstat", "-f").stdout.splitlines()
                     if line.startswith("all.q@")]
        assert instances == [[f"all.q@{node}", "BIP", "0/1/2", "-NA-", instances[0][4], "s"]]
        assert f"suspended on {node}" in cluster.drover("queue", "list").stdout

        # resumed on its own, it stays stopped: its queue instance keeps it suspended
        resumed = cluster.drover("resume", str(first), check=False)
        assert "suspended by its queue instance" in resumed.stdout + resumed.stderr
        assert show(cluster, first)["tasks"][0]["state"] == "suspended" and not counts(first_file)

        unsuspended = run(cluster, bin_dir, "qmod", "-usq", "all.q")
        assert unsuspended.stdout.endswith(f'changed state of "all.q@{node}" (unsuspended)\n'), unsuspended.stdout
        wait_until(lambda: counts(first_file), timeout=30, describe="the first job to count again")
        wait_until(lambda: lines(second_file) >= 3, timeout=60, describe="the second job to start and count")
        again = run(cluster, bin_dir, "qmod", "-usq", f"all.q@{node}")
        assert again.stdout == f'Queue instance "all.q@{node}" is already in the specified state: unsuspended\n'
        cluster.drover("cancel", str(first), str(second))
        cluster.drover("wait", str(first), str(second), check=False)
    finally:
        assert not cluster.stop()


def test_gridengine_qmod_rq_reschedules_every_job_running_in_a_queue_instance(tmp_path: Path) -> None:
    cluster = LocalCluster(cpus=2)
    try:
        cluster.start()
        bin_dir = install(cluster)
        job = cluster.submit("--", "sleep", "300")
        wait_until(lambda: show(cluster, job)["tasks"][0]["state"] == "running", timeout=60, describe="the job to run")
        node = cluster.drover_json("nodes")[0]["name"]
        rescheduled = run(cluster, bin_dir, "qmod", "-rq", f"all.q@{node}")
        assert (rescheduled.returncode, rescheduled.stdout) == (0, f"rescheduling job {job}\n"), rescheduled.stderr
        wait_until(lambda: [t["state"] for t in show(cluster, job)["tasks"]] == ["running"]
                   and len(show(cluster, job)["tasks"][0]["attempts"]) == 2, timeout=60,
                   describe="the job running again as a new attempt")
        assert run(cluster, bin_dir, "qmod", "-rq", "nosuch.q").stderr == 'invalid queue "nosuch.q"\n'
        cluster.drover("cancel", str(job))
        cluster.drover("wait", str(job), check=False)
    finally:
        assert not cluster.stop()


ON_SUSPEND = """
[checkpoints.counter]
interface = "userdefined"
signal = "USR2"
ckpt_dir = "TMP/ckpt/$job_id"
when = "x"
"""


def test_gridengine_checkpoint5_x_a_queue_suspend_migrates_the_job_and_it_restarts_once_unsuspended(
        tmp_path: Path) -> None:
    cluster = LocalCluster(config_toml=ON_SUSPEND.replace("TMP", str(tmp_path)))
    try:
        cluster.start()
        (cluster.workdir / "count.sh").write_text(COUNTER.replace("{limit}", "400"))
        job = cluster.submit("--checkpoint", "counter", "--", "bash", "count.sh")
        progress = tmp_path / "ckpt" / str(job) / "progress"
        wait_until(lambda: progress.exists() and int(progress.read_text() or 0) >= 20, timeout=60,
                   describe="the job to count to 20")
        cluster.drover("queue", "suspend", "default", "--reason", "maintenance")
        # migrated (checkpointed, stopped, requeued), and it waits: its queue is suspended
        wait_until(lambda: show(cluster, job)["tasks"][0]["state"] == "pending", timeout=30,
                   describe="the job migrated back to the queue")
        assert "migrate_requested" in [event["kind"] for event in cluster.drover_json("events", str(job))]
        saved = int((tmp_path / "ckpt" / str(job) / "counter").read_text())
        wait_until(lambda: "queue default is suspended on" in cluster.drover("show", str(job)).stdout,
                   describe="the migrated job waiting for its suspended queue")
        assert len(show(cluster, job)["tasks"][0]["attempts"]) == 1
        cluster.drover("queue", "unsuspend", "default")
        assert cluster.drover("wait", str(job), timeout=90).returncode == 0
        output = (cluster.workdir / f"drover-{job}.out").read_text()
        assert f"resumed at {saved}\n" in output and output.endswith("done at 400\n")
    finally:
        assert not cluster.stop()
