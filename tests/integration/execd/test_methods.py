"""Prolog, PE start, job, PE stop, epilog — at the node's level and the job's — and what their
failures mean (GE shepherd manpage; Accelerator's precmd and postcmd)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until


def cluster_with(tmp_path: Path, queues: str = "", **methods: str) -> LocalCluster:
    lines = "".join(f'{name} = "{command}"\n' for name, command in methods.items())
    return LocalCluster(config_toml="[execd]\n" + lines + queues)


def test_methods_run_in_firing_order_around_the_job(tmp_path: Path) -> None:
    queues = '[queues.fast]\nprolog = "echo queue-prolog"\nepilog = "echo queue-epilog"\n'
    cluster = cluster_with(tmp_path, queues, prolog="echo node-prolog", pe_start="echo pe-start",
                           pe_stop="echo pe-stop", epilog="echo node-epilog")
    try:
        cluster.start()
        job = cluster.submit("--queue", "fast", "--pe", "smp", "1", "--prolog", "echo job-prolog", "--epilog",
                             "echo job-epilog", "--", "echo", "job")
        assert cluster.drover("wait", str(job)).returncode == 0
        assert (cluster.workdir / f"drover-{job}.out").read_text().split() == [
            "node-prolog", "queue-prolog", "job-prolog", "pe-start", "job", "pe-stop", "job-epilog",
            "queue-epilog", "node-epilog"]
        # GE: the PE methods are "for parallel jobs": a job of no parallel environment runs none.
        serial = cluster.submit("--queue", "fast", "--", "echo", "job")
        assert cluster.drover("wait", str(serial)).returncode == 0
        assert (cluster.workdir / f"drover-{serial}.out").read_text().split() == [
            "node-prolog", "queue-prolog", "job", "queue-epilog", "node-epilog"]
        unknown = cluster.drover("submit", "--queue", "slow", "--", "true", check=False)
        assert unknown.returncode == 1 and "unknown queue 'slow'; this cluster has default, fast" in unknown.stderr
    finally:
        assert not cluster.stop()


def test_a_failing_job_prolog_means_the_job_does_not_run_and_fails(cluster: LocalCluster) -> None:
    marker = cluster.workdir / "ran"
    job = cluster.submit("--prolog", "exit 5", "--", "touch", str(marker))
    assert cluster.drover("wait", str(job), check=False).returncode != 0
    shown = cluster.drover_json("show", str(job))
    assert shown["state"] == "failed" and not marker.exists()
    assert shown["tasks"][0]["attempts"][0]["failure"] == "the job prolog exited with status 5; the job did not run"
    assert cluster.drover_json("nodes")[0]["state"] == "up"


def test_a_failing_node_prolog_sets_the_jobs_queue_in_error_on_the_node_and_requeues_the_job(tmp_path: Path) -> None:
    broken = tmp_path / "prolog-broken"
    broken.touch()
    cluster = cluster_with(tmp_path, prolog=f"test ! -e {broken}")
    try:
        cluster.start()
        job = cluster.submit("--", "echo", "ran")
        wait_until(lambda: cluster.drover_json("nodes")[0]["queue_errors"], describe="the queue in error")
        node = cluster.drover_json("nodes")[0]
        assert node["state"] == "up" and "prolog exited with status 1" in node["queue_errors"]["default"]
        shown = cluster.drover_json("show", str(job))
        assert shown["state"] == "pending" and len(shown["tasks"][0]["attempts"]) == 1
        assert "queue default in error" in cluster.drover("nodes").stdout
        broken.unlink()
        cluster.drover("nodes", "--resume", node["name"])  # clears the node's queues in error too
        assert cluster.drover("wait", str(job)).returncode == 0
        assert len(cluster.drover_json("show", str(job))["tasks"][0]["attempts"]) == 2
    finally:
        assert not cluster.stop()


def test_a_failing_node_epilog_sets_the_jobs_queue_in_error_and_requeues_the_job(tmp_path: Path) -> None:
    cluster = cluster_with(tmp_path, epilog="exit 2")
    try:
        cluster.start()
        job = cluster.submit("--", "bash", "-c", "exit 0")
        wait_until(lambda: cluster.drover_json("nodes")[0]["queue_errors"], describe="the queue in error")
        assert cluster.drover_json("nodes")[0]["state"] == "up"
        wait_until(lambda: cluster.drover_json("show", str(job))["state"] == "pending", describe="the job requeued")
    finally:
        assert not cluster.stop()


def test_accelerator_step_22_the_postcmds_exit_status_is_the_jobs_by_default(tmp_path: Path) -> None:
    """Accelerator step 22: "The exit status of the postcmd is used as exit status of the job".

    1. a job that succeeds with an epilog that exits 4 fails with status 4;
    2. a job that exits 3 with an epilog that exits 0 succeeds;
    3. --no-epilog-sets-exit (on the command line, or in a #DROVER line) keeps the job's own;
    4. the node's epilog does not set the job's status (a failing one sets the job's queue in error)."""
    cluster = cluster_with(tmp_path, epilog="exit 0")
    try:
        cluster.start()
        failing = cluster.submit("--epilog", "exit 4", "--", "true")
        assert cluster.drover("wait", str(failing), check=False).returncode == 4
        shown = cluster.drover_json("show", str(failing))
        assert shown["state"] == "failed" and shown["tasks"][0]["exit_status"] == 4
        rescued = cluster.submit("--epilog", "exit 0", "--", "bash", "-c", "exit 3")
        assert cluster.drover("wait", str(rescued)).returncode == 0
        assert cluster.drover_json("show", str(rescued))["state"] == "completed"
        asked = cluster.submit("--epilog", "exit 0", "--epilog-sets-exit", "--", "bash", "-c", "exit 3")
        assert cluster.drover("wait", str(asked)).returncode == 0
        plain = cluster.submit("--epilog", "exit 4", "--no-epilog-sets-exit", "--", "true")
        assert cluster.drover("wait", str(plain)).returncode == 0
        script = cluster.workdir / "keeps.sh"
        script.write_text("#!/bin/bash\n#DROVER --epilog 'exit 4' --no-epilog-sets-exit\nexit 0\n")
        directive = cluster.submit(str(script))
        assert cluster.drover("wait", str(directive)).returncode == 0
    finally:
        assert not cluster.stop()


def test_a_cancel_during_the_prolog_means_the_job_never_starts(tmp_path: Path) -> None:
    in_prolog = tmp_path / "in-prolog"
    cluster = cluster_with(tmp_path, prolog=f"touch {in_prolog}; sleep 2")
    try:
        cluster.start()
        ran = cluster.workdir / "job-ran"
        job = cluster.submit("--", "touch", str(ran))
        wait_until(in_prolog.exists, describe="the node prolog to run")
        assert cluster.drover("cancel", str(job)).returncode == 0
        cluster.drover("wait", str(job), check=False)
        shown = cluster.drover_json("show", str(job))
        assert shown["state"] == "cancelled", shown
        assert "stopped before the job started" in shown["tasks"][0]["attempts"][0]["failure"]
        assert not ran.exists()
        assert cluster.drover_json("nodes")[0]["state"] == "up"
    finally:
        assert not cluster.stop()
