"""Grid Engine's exit table (seeds/gridengine-shepherd-manpage.txt; core/exit_status.EXIT_TABLE;
docs/seeds.md), row by row, with real scripts on a personal cluster: the node's prolog, PE
start, PE stop and epilog exit with the status a job's working directory asks of them, once
(the file is removed), so the job's next attempt runs clean. A failing method sets the job's
queue in error on the node (queue@node), never the node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run
from tests.helpers.wait import wait_until

METHOD = """#!/bin/bash
# Exits with the status in $DROVER_WORKDIR/<step>, once (the file goes), else 0.
f="$DROVER_WORKDIR/$1"
if [ -f "$f" ]; then code=$(cat "$f"); rm -f "$f"; exit "$code"; fi
exit 0
"""


def cluster_with_methods(tmp_path: Path, controller: str = "") -> LocalCluster:
    script = tmp_path / "method.sh"
    script.write_text(METHOD)
    script.chmod(0o755)
    methods = "".join(f'{step} = "{script} {step}"\n' for step in ("prolog", "pe_start", "pe_stop", "epilog"))
    return LocalCluster(config_toml=f"[controller]\n{controller}\n[execd]\n{methods}"
                                    "[queues.fast]\nnice = 0\n[queues.slow]\nnice = 0\n")


def job_dir(cluster: LocalCluster, name: str, **statuses: int) -> Path:
    """A working directory whose files tell the node's methods how to exit."""
    where = cluster.workdir / name
    where.mkdir()
    for step, code in statuses.items():
        (where / step).write_text(str(code))
    return where


def show(cluster: LocalCluster, job: int) -> dict[str, Any]:
    return cluster.drover_json("show", str(job))  # type: ignore[no-any-return]


def node(cluster: LocalCluster) -> dict[str, Any]:
    return cluster.drover_json("nodes")[0]  # type: ignore[no-any-return]


def attempts(cluster: LocalCluster, job: int) -> int:
    return len(show(cluster, job)["tasks"][0]["attempts"])


def queue_in_error(cluster: LocalCluster, queue: str) -> dict[str, Any]:
    return wait_until(lambda: (n := node(cluster))["queue_errors"].get(queue) and n,
                      describe=f"queue {queue} in error on the node")


def waits(cluster: LocalCluster, job: int, state: str) -> None:
    wait_until(lambda: show(cluster, job)["state"] == state, describe=f"job {job} {state}")


def test_gridengine_manpage_prolog_failure_sets_the_queue_in_error_and_requeues(tmp_path: Path) -> None:
    cluster = cluster_with_methods(tmp_path)
    try:
        cluster.start()
        job = cluster.submit("--queue", "fast", "--", "echo", "ran", cwd=job_dir(cluster, "j", prolog=1))
        failed = queue_in_error(cluster, "fast")
        assert failed["state"] == "up" and "the node prolog exited with status 1" in failed["queue_errors"]["fast"]
        shown = show(cluster, job)
        assert shown["state"] == "pending" and len(shown["tasks"][0]["attempts"]) == 1
        assert "queue fast in error" in cluster.drover("nodes").stdout
        assert "in error on" in cluster.drover("queue", "show", "fast").stdout
        wait_until(lambda: "queue fast is in error on" in cluster.drover("why", str(job)).stdout,
                   describe="drover why to say the queue is in error")
        # the node still runs the other queues' jobs
        other = cluster.submit("--queue", "slow", "--", "true")
        assert cluster.drover("wait", str(other)).returncode == 0
        assert show(cluster, job)["state"] == "pending"
        cluster.drover("node", "resume", failed["name"], "--queue", "fast")
        assert cluster.drover("wait", str(job)).returncode == 0
        assert attempts(cluster, job) == 2 and node(cluster)["queue_errors"] == {}
    finally:
        assert not cluster.stop()


def test_gridengine_manpage_prolog_exit_99_requeues_without_a_queue_error(tmp_path: Path) -> None:
    cluster = cluster_with_methods(tmp_path)
    try:
        cluster.start()
        job = cluster.submit("--queue", "fast", "--", "true", cwd=job_dir(cluster, "j", prolog=99))
        assert cluster.drover("wait", str(job)).returncode == 0
        assert attempts(cluster, job) == 2 and node(cluster)["queue_errors"] == {}
    finally:
        assert not cluster.stop()


def test_gridengine_manpage_prolog_exit_100_holds_the_job_in_error_without_a_queue_error(tmp_path: Path) -> None:
    cluster = cluster_with_methods(tmp_path)
    try:
        cluster.start()
        job = cluster.submit("--queue", "fast", "--", "true", cwd=job_dir(cluster, "j", prolog=100))
        waits(cluster, job, "held")
        assert node(cluster)["queue_errors"] == {}
        cluster.drover("release", str(job))
        assert cluster.drover("wait", str(job)).returncode == 0 and attempts(cluster, job) == 2
    finally:
        assert not cluster.stop()


def test_gridengine_manpage_pe_start_failure_sets_the_queue_in_error_and_requeues(tmp_path: Path) -> None:
    cluster = cluster_with_methods(tmp_path)
    try:
        cluster.start()
        marker = cluster.workdir / "ran"
        # 99 is "Other" for a PE start: 1 and 2 are the job's, the prolog's and the epilog's only
        job = cluster.submit("--queue", "fast", "--pe", "smp", "1", "--", "touch", str(marker),
                             cwd=job_dir(cluster, "j", pe_start=99))
        failed = queue_in_error(cluster, "fast")
        assert "the node pe_start exited with status 99" in failed["queue_errors"]["fast"]
        assert show(cluster, job)["state"] == "pending" and not marker.exists()
        cluster.drover("node", "resume", failed["name"], "--queue", "fast")
        assert cluster.drover("wait", str(job)).returncode == 0 and marker.exists()
    finally:
        assert not cluster.stop()


def test_gridengine_manpage_pe_stop_failure_sets_the_queue_in_error_and_does_not_requeue(tmp_path: Path) -> None:
    cluster = cluster_with_methods(tmp_path)
    try:
        cluster.start()
        job = cluster.submit("--queue", "fast", "--pe", "smp", "1", "--", "bash", "-c", "exit 3",
                             cwd=job_dir(cluster, "j", pe_stop=1))
        assert cluster.drover("wait", str(job), check=False).returncode == 3  # the job keeps its own status
        shown = show(cluster, job)
        assert shown["state"] == "failed" and len(shown["tasks"][0]["attempts"]) == 1
        assert "the node pe_stop exited with status 1" in queue_in_error(cluster, "fast")["queue_errors"]["fast"]
    finally:
        assert not cluster.stop()


def test_gridengine_manpage_epilog_failure_sets_the_queue_in_error_and_requeues(tmp_path: Path) -> None:
    cluster = cluster_with_methods(tmp_path)
    try:
        cluster.start()
        where = job_dir(cluster, "j", epilog=3)
        job = cluster.submit("--queue", "fast", "--", "echo", "ran", cwd=where)
        failed = queue_in_error(cluster, "fast")
        assert "the node epilog exited with status 3" in failed["queue_errors"]["fast"]
        waits(cluster, job, "pending")  # requeued, though the job ran and succeeded
        assert (where / f"drover-{job}.out").read_text().split() == ["ran"]
        cluster.drover("node", "resume", failed["name"], "--queue", "fast")
        assert cluster.drover("wait", str(job)).returncode == 0 and attempts(cluster, job) == 2
    finally:
        assert not cluster.stop()


def test_gridengine_manpage_epilog_exit_99_requeues_without_a_queue_error(tmp_path: Path) -> None:
    cluster = cluster_with_methods(tmp_path)
    try:
        cluster.start()
        job = cluster.submit("--queue", "fast", "--", "true", cwd=job_dir(cluster, "j", epilog=99))
        assert cluster.drover("wait", str(job)).returncode == 0
        assert attempts(cluster, job) == 2 and node(cluster)["queue_errors"] == {}
    finally:
        assert not cluster.stop()


def test_gridengine_manpage_epilog_exit_100_holds_the_job_in_error_without_a_queue_error(tmp_path: Path) -> None:
    cluster = cluster_with_methods(tmp_path)
    try:
        cluster.start()
        job = cluster.submit("--queue", "fast", "--", "true", cwd=job_dir(cluster, "j", epilog=100))
        waits(cluster, job, "held")
        assert node(cluster)["queue_errors"] == {}
        # drover why names the epilog that asked for the hold, not requeue_held (which is off)
        why = cluster.drover("why", str(job)).stdout
        assert "the node epilog exited with status 100, which asks for a hold" in why, why
        assert "requeue_held" not in why, why
    finally:
        assert not cluster.stop()


def test_gridengine_manpage_job_exit_99_requeues_and_100_holds_in_error(tmp_path: Path) -> None:
    cluster = cluster_with_methods(tmp_path)
    try:
        cluster.start()
        again = cluster.submit("--", "bash", "-c", "test -e once && exit 0; touch once; exit 99",
                               cwd=job_dir(cluster, "requeue"))
        held = cluster.submit("--", "bash", "-c", "exit 100", cwd=job_dir(cluster, "hold"))
        assert cluster.drover("wait", str(again)).returncode == 0 and attempts(cluster, again) == 2
        waits(cluster, held, "held")
        assert node(cluster)["queue_errors"] == {}
    finally:
        assert not cluster.stop()


def test_gridengine_forbid_reschedule_and_forbid_apperror_make_99_and_100_other(tmp_path: Path) -> None:
    """With both switches a job's status is plain (0 succeeds, anything else fails), and a prolog's
    99 is "Other": the queue in error and the job requeued."""
    cluster = cluster_with_methods(tmp_path, "forbid_reschedule = true\nforbid_apperror = true\n")
    try:
        cluster.start()
        for code in (99, 100):
            job = cluster.submit("--", "bash", "-c", f"exit {code}", cwd=job_dir(cluster, f"exit{code}"))
            assert cluster.drover("wait", str(job), check=False).returncode == code
            shown = show(cluster, job)
            assert shown["state"] == "failed" and shown["tasks"][0]["exit_status"] == code
            assert len(shown["tasks"][0]["attempts"]) == 1
        job = cluster.submit("--queue", "fast", "--", "true", cwd=job_dir(cluster, "prolog", prolog=99))
        failed = queue_in_error(cluster, "fast")
        assert "the node prolog exited with status 99" in failed["queue_errors"]["fast"]
        assert show(cluster, job)["state"] == "pending"
        cluster.drover("node", "resume", failed["name"])  # every queue of the node
        assert cluster.drover("wait", str(job)).returncode == 0 and node(cluster)["queue_errors"] == {}
    finally:
        assert not cluster.stop()


def test_gridengine_qmod_c_clears_a_queue_instance_in_error_and_qstat_f_shows_it(tmp_path: Path) -> None:
    cluster = cluster_with_methods(tmp_path)
    try:
        cluster.start()
        bin_dir = install(cluster)
        job = cluster.submit("--", "true", cwd=job_dir(cluster, "j", prolog=1))
        name = queue_in_error(cluster, "default")["name"]
        lines = {line.split()[0]: line.split() for line in run(cluster, bin_dir, "qstat", "-f").stdout.splitlines()
                 if "@" in line}
        assert lines[f"all.q@{name}"][-1] == "E"
        cleared = run(cluster, bin_dir, "qmod", "-c", f"all.q@{name}")
        assert cleared.returncode == 0, cleared.stderr
        assert cleared.stdout.endswith(f'cleared error state of queue "all.q@{name}"\n')
        assert cluster.drover("wait", str(job)).returncode == 0 and node(cluster)["queue_errors"] == {}
        again = run(cluster, bin_dir, "qmod", "-cq", f"all.q@{name}")
        assert again.returncode == 0 and "already in the specified state: no error" in again.stdout
    finally:
        assert not cluster.stop()
