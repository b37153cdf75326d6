"""What comes while an attempt's prolog runs, on a real cluster: a hold stops the attempt before
its job starts and the task waits, held, until released; a signal is kept and reaches the job's
trap once the job has started; and when the job does not run, the site's epilogs still clean up
after its prologs while the job's own epilog does not (seeds: GE's shepherd, the Accelerator's
precmd and postcmd; shepherd/main.py, _clean_up_without_job)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

SLOW_PROLOG_S = 3  # long enough for a command to arrive while it runs


def cluster_with(queues: str = "", **methods: str) -> LocalCluster:
    lines = "".join(f'{name} = "{command}"\n' for name, command in methods.items())
    return LocalCluster(config_toml="[execd]\n" + lines + queues)


def slow_prolog(in_prolog: Path, say: str = "") -> str:
    """A node prolog that marks that it runs (afresh for each attempt), then takes its time."""
    return f"{say}touch {in_prolog}; sleep {SLOW_PROLOG_S}; rm -f {in_prolog}"


def in_the_prolog(cluster: LocalCluster, job: int, in_prolog: Path) -> None:
    wait_until(in_prolog.exists, describe="the node prolog to run")
    assert cluster.drover_json("show", str(job))["state"] == "dispatched"


def task_of(cluster: LocalCluster, job: int) -> Any:
    return cluster.drover_json("show", str(job))["tasks"][0]


def test_a_hold_during_the_prolog_stops_the_attempt_and_a_release_runs_the_job_as_attempt_two(tmp_path: Path) -> None:
    in_prolog, epilogs = tmp_path / "in-prolog", tmp_path / "node-epilogs"
    cluster = cluster_with(prolog=slow_prolog(in_prolog), epilog=f"echo ran >> {epilogs}")
    try:
        cluster.start()
        ran, job_epilog = cluster.workdir / "job-ran", cluster.workdir / "job-epilog-ran"
        job = cluster.submit("--epilog", f"touch {job_epilog}", "--", "touch", str(ran))
        in_the_prolog(cluster, job, in_prolog)
        held = cluster.drover("hold", str(job))
        assert "stopping before its job starts, to be held" in held.stdout + held.stderr
        wait_until(lambda: task_of(cluster, job)["state"] == "held", describe="the task to wait, held")
        task = task_of(cluster, job)
        (first,) = task["attempts"]
        assert first["failure"] == "stopped before the job started (a hold came during its prolog)", first
        assert first["terminated"] and first["started_at"] is None
        assert not ran.exists()  # the job never started
        assert epilogs.read_text().split() == ["ran"]  # GE: the node's epilog cleans up after its prolog
        assert not job_epilog.exists()  # the job's own epilog follows only a job that ran
        assert cluster.drover_json("nodes")[0]["state"] == "up"  # a hold is no failure of the node's
        held_events = [e for e in cluster.drover_json("events", str(job)) if e["kind"] == "held"]
        assert [e["detail"]["trigger"] for e in held_events] == ["hold"], held_events  # a user's hold
        # It waits held: nothing starts it until it is released.
        assert cluster.drover_json("show", str(job))["state"] == "held"
        assert not in_prolog.exists()

        cluster.drover("release", str(job))
        assert cluster.drover("wait", str(job)).returncode == 0
        shown = cluster.drover_json("show", str(job))
        assert shown["state"] == "completed", shown
        assert [a["number"] for a in shown["tasks"][0]["attempts"]] == [1, 2]
        assert ran.exists() and job_epilog.exists()
        assert epilogs.read_text().split() == ["ran", "ran"]
    finally:
        assert not cluster.stop()


def test_a_requeue_during_the_prolog_never_starts_the_job_and_a_new_attempt_runs_it(tmp_path: Path) -> None:
    in_prolog = tmp_path / "in-prolog"
    cluster = cluster_with(prolog=slow_prolog(in_prolog))
    try:
        cluster.start()
        runs = cluster.workdir / "runs"
        job = cluster.submit("--", "bash", "-c", f"echo $DROVER_ATTEMPT >> {runs}")
        in_the_prolog(cluster, job, in_prolog)
        cluster.drover("requeue", str(job))
        assert cluster.drover("wait", str(job)).returncode == 0
        first, second = task_of(cluster, job)["attempts"]
        assert first["failure"] == "stopped before the job started (a requeue came during its prolog)", first
        assert second["exit_code"] == 0 and runs.read_text().count("\n") == 1  # it ran once: attempt 2
    finally:
        assert not cluster.stop()


def test_a_hold_of_a_running_job_is_refused_and_changes_nothing(cluster: LocalCluster) -> None:
    started = cluster.workdir / "started"
    job = cluster.submit("--", "bash", "-c", f"touch {started}; sleep 30")
    wait_until(started.exists, describe="the job to run")
    refused = cluster.drover("hold", str(job), check=False)
    assert refused.returncode != 0 and f"job {job} has no pending task to hold" in refused.stderr
    assert cluster.drover_json("show", str(job))["state"] == "running"
    cluster.drover("cancel", str(job))
    cluster.drover("wait", str(job), check=False)


def test_signals_during_the_prolog_reach_the_jobs_traps_in_order_once_it_started(tmp_path: Path) -> None:
    in_prolog = tmp_path / "in-prolog"
    cluster = cluster_with(prolog=slow_prolog(in_prolog))
    try:
        cluster.start()
        got, started = cluster.workdir / "got", cluster.workdir / "started"
        # Traps first; then the job waits for both signals (10 s at most) and exits 0 once they
        # came, with builtins only (a trap that runs during a $(...) can cut its output short).
        script = (f"trap 'echo USR1 >> {got}' USR1; trap 'echo USR2 >> {got}' USR2; touch {started}; "
                  f"i=0; while [ $i -lt 200 ]; do if [ -f {got} ]; then mapfile -t lines < {got}; "
                  "[ ${#lines[@]} -ge 2 ] && exit 0; fi; sleep 0.05; i=$((i + 1)); done; exit 1")
        job = cluster.submit("--", "bash", "-c", script)
        in_the_prolog(cluster, job, in_prolog)
        assert cluster.drover("signal", str(job), "USR1").returncode == 0
        assert cluster.drover("signal", str(job), "USR2").returncode == 0
        # The node's allow-list still applies before the job starts.
        refused = cluster.drover("signal", str(job), "SEGV", check=False)
        assert refused.returncode != 0 and "not a signal a job may be sent" in refused.stderr
        assert not started.exists()  # kept: the job has not started yet
        assert cluster.drover("wait", str(job)).returncode == 0, cluster.drover_json("show", str(job))
        assert got.read_text().split() == ["USR1", "USR2"]
        assert cluster.drover_json("show", str(job))["state"] == "completed"
    finally:
        assert not cluster.stop()


def test_a_kill_during_the_prolog_kills_the_job_as_it_starts(tmp_path: Path) -> None:
    in_prolog = tmp_path / "in-prolog"
    cluster = cluster_with(prolog=slow_prolog(in_prolog))
    try:
        cluster.start()
        job = cluster.submit("--", "sleep", "30")
        in_the_prolog(cluster, job, in_prolog)
        assert cluster.drover("signal", str(job), "KILL").returncode == 0
        assert cluster.drover("wait", str(job), check=False).returncode != 0
        task = task_of(cluster, job)
        (attempt,) = task["attempts"]
        assert task["state"] == "failed" and attempt["signal"] == 9 and attempt["started_at"] is not None, task
    finally:
        assert not cluster.stop()


def test_when_the_job_does_not_run_the_site_epilogs_still_run_and_the_jobs_own_does_not(tmp_path: Path) -> None:
    in_prolog = tmp_path / "in-prolog"
    queues = '[queues.fast]\nprolog = "echo queue-prolog"\nepilog = "echo queue-epilog"\n'
    cluster = cluster_with(queues, prolog=slow_prolog(in_prolog, say="echo node-prolog; "),
                           pe_start="echo pe-start", pe_stop="echo pe-stop", epilog="echo node-epilog")
    try:
        cluster.start()

        def output(job: int) -> list[str]:
            return (cluster.workdir / f"drover-{job}.out").read_text().split()

        # A cancel during the node's prolog: no later prolog, no PE start (so no PE stop), no
        # job, no job epilog; the queue's and the node's epilogs clean up.
        cancelled = cluster.submit("--queue", "fast", "--pe", "smp", "1", "--prolog", "echo job-prolog", "--epilog",
                                   "echo job-epilog", "--", "echo", "job")
        in_the_prolog(cluster, cancelled, in_prolog)
        cluster.drover("cancel", str(cancelled))
        cluster.drover("wait", str(cancelled), check=False)
        assert cluster.drover_json("show", str(cancelled))["state"] == "cancelled"
        assert output(cancelled) == ["node-prolog", "queue-epilog", "node-epilog"]

        # A failing job prolog (the Accelerator's precmd): the job is done and failed; its own
        # epilog (the postcmd) does not run, the site's do.
        failed = cluster.submit("--queue", "fast", "--pe", "smp", "1", "--prolog", "echo job-prolog; exit 3",
                                "--epilog", "echo job-epilog", "--", "echo", "job")
        assert cluster.drover("wait", str(failed), check=False).returncode != 0
        (attempt,) = task_of(cluster, failed)["attempts"]
        assert attempt["failure"] == "the job prolog exited with status 3; the job did not run"
        assert output(failed) == ["node-prolog", "queue-prolog", "job-prolog", "queue-epilog", "node-epilog"]
        assert cluster.drover_json("nodes")[0]["state"] == "up"
    finally:
        assert not cluster.stop()
