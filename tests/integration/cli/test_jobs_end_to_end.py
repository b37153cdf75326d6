"""The commands end to end against a real controller and execd, as a user runs them."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until


def test_command_job_runs_and_its_exit_status_output_and_usage_are_recorded(cluster: LocalCluster) -> None:
    job = cluster.submit("--name", "busy", "--", "bash", "-c",
                         "for i in $(seq 1 30000); do :; done; echo out; echo err >&2; exit 3")
    waited = cluster.drover("wait", str(job), check=False)
    assert waited.returncode == 3, waited.stdout + waited.stderr
    assert f"job {job} failed, exit status 3" in waited.stdout
    output = (cluster.workdir / f"drover-{job}.out").read_text()
    assert output == "out\nerr\n"  # stderr joined into stdout by default
    shown = cluster.drover_json("show", str(job))
    assert shown["state"] == "failed" and shown["exit_status"] == 3
    (task,) = shown["tasks"]
    (attempt,) = task["attempts"]
    assert attempt["exit_code"] == 3 and attempt["signal"] is None
    usage = attempt["usage"]
    assert usage["user_cpu_s"] + usage["sys_cpu_s"] > 0
    assert usage["wall_s"] > 0
    # bash's few MiB stay under the mark its process started from, the shepherd's: not known (0),
    # where wait4 alone would have said the shepherd's resident set.
    assert usage["max_rss_kib"] == 0
    history = cluster.drover_json("history")
    (row,) = [r for r in history if r["job_id"] == job]
    assert row["exit_status"] == 3 and row["state"] == "failed" and row["usage"]["max_rss_kib"] == 0
    assert "busy" in cluster.drover("history").stdout


def test_script_file_gets_output_patterns_separate_stderr_and_environment(cluster: LocalCluster) -> None:
    script = cluster.workdir / "job.sh"
    script.write_text("echo job=$DROVER_JOB_ID slurm=$SLURM_JOB_ID sge=$JOB_ID task=$SGE_TASK_ID\n"
                      "echo cwd=$(pwd) stdin=$(readlink /proc/self/fd/0)\necho oops >&2\n"
                      "test -d \"$TMPDIR\" && echo tmp=ok\necho var=$GREETING\n")
    job = cluster.submit("--name", "patterned", "-o", "out-%x-%j-%u.txt", "-e", "err-%j.txt",
                         "--env", "GREETING=hi there", str(script))
    assert cluster.drover("wait", str(job)).returncode == 0
    user = cluster.drover_json("show", str(job))["owner"]
    out = (cluster.workdir / f"out-patterned-{job}-{user}.txt").read_text().splitlines()
    assert out[0] == f"job={job} slurm={job} sge={job} task=undefined"
    assert out[1] == f"cwd={cluster.workdir} stdin=/dev/null"
    assert "tmp=ok" in out and "var=hi there" in out
    assert (cluster.workdir / f"err-{job}.txt").read_text() == "oops\n"


def test_a_comment_is_kept_given_to_the_job_and_shown(cluster: LocalCluster) -> None:
    job = cluster.submit("--comment", "run 7: the baseline", "--", "bash", "-c", 'echo "comment=$DROVER_COMMENT"')
    assert cluster.drover("wait", str(job)).returncode == 0
    assert (cluster.workdir / f"drover-{job}.out").read_text() == "comment=run 7: the baseline\n"
    assert cluster.drover_json("show", str(job))["options"] == {"comment": "run 7: the baseline"}
    assert "  comment     run 7: the baseline\n" in cluster.drover("show", str(job)).stdout
    plain = cluster.submit("--", "bash", "-c", 'echo "comment=${DROVER_COMMENT-unset}"')
    assert cluster.drover("wait", str(plain)).returncode == 0
    assert (cluster.workdir / f"drover-{plain}.out").read_text() == "comment=unset\n"
    assert cluster.drover_json("show", str(plain))["options"] == {}


def test_array_tasks_run_with_their_index_and_never_more_than_max_at_once(cluster: LocalCluster) -> None:
    log = cluster.workdir / "spans"
    job = cluster.submit("--array", "1-7:2%1", "--", "bash", "-c",
                         f"echo \"$SLURM_ARRAY_TASK_ID $(date +%s.%N) start\" >> {log}; sleep 0.2; "
                         f"echo \"$SLURM_ARRAY_TASK_ID $(date +%s.%N) end\" >> {log}")
    assert cluster.drover("wait", str(job)).returncode == 0
    events = [line.split() for line in log.read_text().splitlines()]
    running = peak = 0
    for _, _, kind in sorted(events, key=lambda e: float(e[1])):
        running += 1 if kind == "start" else -1
        peak = max(peak, running)
    assert peak == 1
    assert sorted({int(e[0]) for e in events}) == [1, 3, 5, 7]
    for index in (1, 3, 5, 7):
        assert (cluster.workdir / f"drover-{job}_{index}.out").exists()
    shown = cluster.drover_json("show", str(job))
    assert shown["task_counts"] == {"completed": 4} and shown["array"] == "1-7:2"


def test_cancel_ends_pending_at_once_and_stops_running_with_sigterm(cluster: LocalCluster) -> None:
    marker = cluster.workdir / "got-term"
    script = f"trap 'echo term > {marker}; exit 143' TERM; touch {cluster.workdir}/ready-$DROVER_JOB_ID; sleep 600 & wait"
    running = [cluster.submit("--", "bash", "-c", script) for _ in range(2)]
    # Two CPUs: it fits in no running job's room, so it is not promised behind one (that cancel
    # is tests/integration/compat/test_promised_jobs_waiting.py's): it never gets an attempt.
    pending = cluster.submit("--cpus", "2", "--", "sleep", "600")
    wait_until(lambda: all((cluster.workdir / f"ready-{j}").exists() for j in running),
               describe="both jobs running, their traps set")
    assert cluster.drover_json("show", str(pending))["state"] == "pending"
    result = cluster.drover("cancel", *map(str, running), str(pending))
    assert "asked to stop" in result.stdout and "pending cancelled" in result.stdout
    assert cluster.drover("wait", *map(str, running), str(pending), check=False).returncode != 0
    for job in [*running, pending]:
        assert cluster.drover_json("show", str(job))["state"] == "cancelled"
    assert marker.read_text() == "term\n"
    attempts = [cluster.drover_json("show", str(j))["tasks"][0]["attempts"] for j in running]
    assert all(a[0]["terminated"] for a in attempts)
    assert cluster.drover_json("show", str(pending))["tasks"][0]["attempts"] == []


def test_cancel_kills_a_job_that_ignores_sigterm_after_the_grace_period(cluster: LocalCluster) -> None:
    ready = cluster.workdir / "ready"
    job = cluster.submit("--", "bash", "-c", f"trap '' TERM; touch {ready}; while :; do sleep 0.1; done")
    wait_until(ready.exists, describe="the job running, SIGTERM ignored")
    cluster.drover("cancel", str(job))
    began = time.monotonic()
    cluster.drover("wait", str(job), check=False)
    assert time.monotonic() - began >= cluster.kill_grace_s * 0.8
    (attempt,) = cluster.drover_json("show", str(job))["tasks"][0]["attempts"]
    assert attempt["signal"] == 9 and attempt["terminated"]


def test_hold_keeps_a_job_from_starting_until_released(cluster: LocalCluster) -> None:
    job = cluster.submit("--hold", "--", "true")
    assert cluster.drover_json("show", str(job))["state"] == "held"
    assert cluster.drover("wait", "--timeout", "0.3", str(job), check=False).returncode == 124
    assert cluster.drover_json("show", str(job))["state"] == "held"
    cluster.drover("release", str(job))
    assert cluster.drover("wait", str(job)).returncode == 0
    other = cluster.submit("--hold", "--", "true")
    cluster.drover("release", str(other))
    held_again = cluster.drover("hold", str(other), check=False)  # it may have started already
    if held_again.returncode == 0:
        cluster.drover("release", str(other))
    assert cluster.drover("wait", str(other)).returncode == 0


def test_afterok_dependency_waits_and_never_runs_after_a_failure(cluster: LocalCluster) -> None:
    stamp = cluster.workdir / "order"
    first = cluster.submit("--", "bash", "-c", f"sleep 0.3; echo first >> {stamp}")
    second = cluster.submit("--dependency", f"afterok:{first}", "--", "bash", "-c", f"echo second >> {stamp}")
    assert cluster.drover_json("show", str(second))["pending_reason"] in ("dependency", None)
    assert cluster.drover("wait", str(second)).returncode == 0
    assert stamp.read_text() == "first\nsecond\n"
    # The failing job waits for a gate, opened once the dependants were seen waiting for it: on
    # a slow machine it would otherwise have failed before `status` was read.
    gate = cluster.workdir / "fail-now"
    failing = cluster.submit("--", "bash", "-c", f"until [ -e {gate} ]; do sleep 0.02; done; false")
    cancelled = cluster.submit("--dependency", f"afterok:{failing}", "--", "true")  # --kill-on-invalid-dep yes
    blocked = cluster.submit("--dependency", f"afterok:{failing}", "--kill-on-invalid-dep", "no", "--", "true")
    wait_until(lambda: cluster.drover("status").stdout.count(f"waiting for job {failing} (afterok) to complete") == 2,
               describe=f"both dependants waiting for job {failing}")
    gate.touch()
    cluster.drover("wait", str(failing), check=False)
    wait_until(lambda: cluster.drover_json("show", str(blocked))["pending_reason"] == "dependency_never_satisfied",
               describe="the dependent job to be marked never satisfiable")
    assert f"job {failing} (afterok) did not complete" in cluster.drover("status").stdout
    shown = cluster.drover_json("show", str(cancelled))
    assert shown["state"] == "cancelled" and shown["tasks"][0]["attempts"] == []
    assert f"its dependency can never be met (job {failing} (afterok) did not complete)" in shown["end_reason"]
    assert "dependency_never_satisfied" in cluster.drover("events", str(cancelled)).stdout
    cluster.drover("cancel", str(blocked))


def test_begin_time_starts_the_job_when_it_comes_and_not_before(cluster: LocalCluster) -> None:
    submitted = time.time()
    job = cluster.submit("--begin", "now+2", "--", "true")
    shown = cluster.drover_json("show", str(job))
    assert shown["pending_reason"] == "begin_time" and shown["begin_at"] >= submitted + 1
    assert "waiting for its begin time" in cluster.drover("status").stdout
    assert cluster.drover("wait", str(job)).returncode == 0  # woken by the controller's timer, no other change
    (attempt,) = cluster.drover_json("show", str(job))["tasks"][0]["attempts"]
    assert attempt["dispatched_at"] >= shown["begin_at"]


def test_singleton_jobs_of_one_name_run_one_at_a_time(cluster: LocalCluster) -> None:
    spans = cluster.workdir / "spans"
    script = f"echo start $(date +%s.%N) >> {spans}; sleep 0.4; echo end $(date +%s.%N) >> {spans}"
    jobs = [cluster.submit("--name", "solo", "--dependency", "singleton", "--", "bash", "-c", script)
            for _ in range(3)]
    cluster.drover("wait", *map(str, jobs))
    marks = [line.split()[0] for line in spans.read_text().splitlines()]
    assert marks == ["start", "end"] * 3  # never two at once, on a node with room for two


def test_higher_priority_starts_first(cluster: LocalCluster) -> None:
    order, go = cluster.workdir / "order", cluster.workdir / "go"
    # The blocker holds the node until both others wait behind it, however slow their submission.
    blocker = cluster.submit("--cpus", "2", "--priority", "100", "--", "bash", "-c",
                             f"until [ -e {go} ]; do sleep 0.05; done")
    low = cluster.submit("--cpus", "2", "--priority", "1", "--", "bash", "-c", f"echo low >> {order}")
    high = cluster.submit("--cpus", "2", "--priority", "10", "--", "bash", "-c", f"echo high >> {order}")
    go.touch()
    assert cluster.drover("wait", str(blocker), str(low), str(high)).returncode == 0
    assert order.read_text() == "high\nlow\n"


def test_wait_exits_with_the_first_failure_of_several_jobs(cluster: LocalCluster) -> None:
    ok = cluster.submit("--", "true")
    bad = cluster.submit("--", "bash", "-c", "exit 7")
    assert cluster.drover("wait", str(ok)).returncode == 0
    assert cluster.drover("wait", str(ok), str(bad), check=False).returncode == 7
    killed = cluster.submit("--", "bash", "-c", "kill -KILL $$")
    assert cluster.drover("wait", str(killed), check=False).returncode == 128 + 9


def test_status_filters_by_state_and_name(cluster: LocalCluster) -> None:
    sleeper = cluster.submit("--name", "sleeper", "--", "sleep", "30")
    held = cluster.submit("--name", "later", "--hold", "--", "true")
    wait_until(lambda: cluster.drover_json("show", str(sleeper))["state"] == "running", describe="running")
    running = cluster.drover_json("status", "--state", "running")
    assert [j["id"] for j in running] == [sleeper]
    assert [j["id"] for j in cluster.drover_json("status", "--name", "later")] == [held]
    assert {j["id"] for j in cluster.drover_json("status")} == {sleeper, held}
    table = cluster.drover("status").stdout
    assert "sleeper" in table and "RUNNING" in table and "HELD" in table
    cluster.drover("cancel", str(sleeper), str(held))
    cluster.drover("wait", str(sleeper), check=False)
    assert cluster.drover_json("status") == []
    ended = cluster.drover_json("status", "--all")
    assert {j["id"] for j in ended} >= {sleeper, held}


def test_logs_prints_and_follows_output(cluster: LocalCluster) -> None:
    job = cluster.submit("--", "bash", "-c", "for i in 1 2 3; do echo line $i; sleep 0.2; done")
    followed = cluster.drover("logs", "-f", str(job))
    assert followed.stdout == "line 1\nline 2\nline 3\n"
    assert cluster.drover("logs", str(job)).stdout == "line 1\nline 2\nline 3\n"
    array = cluster.submit("--array", "1-2", "--", "bash", "-c", "echo task $DROVER_ARRAY_TASK_ID")
    cluster.drover("wait", str(array))
    assert cluster.drover("logs", f"{array}.2").stdout == "task 2\n"
    assert "is an array" in cluster.drover("logs", str(array), check=False).stderr


def test_job_that_exits_99_is_requeued_as_a_new_attempt(cluster: LocalCluster) -> None:
    flag = cluster.workdir / "second-time"
    job = cluster.submit("--", "bash", "-c", f"if [ -e {flag} ]; then exit 0; fi; touch {flag}; exit 99")
    assert cluster.drover("wait", str(job)).returncode == 0
    attempts = cluster.drover_json("show", str(job))["tasks"][0]["attempts"]
    assert [a["exit_code"] for a in attempts] == [99, 0]


def test_nodes_and_events_describe_the_cluster(cluster: LocalCluster) -> None:
    (node,) = cluster.drover_json("nodes")
    assert node["state"] == "up" and node["cpus"] == cluster.cpus
    job = cluster.submit("--", "true")
    cluster.drover("wait", str(job))
    kinds = [e["kind"] for e in cluster.drover_json("events", str(job))]
    assert kinds[0] == "submitted" and kinds[-1] == "job_ended"
    assert [k for k in kinds if k != "cleanup_step"] == ["submitted", "dispatched", "started", "exited",
                                                         "completed", "job_ended"]
    afters = [e["detail"].get("after") for e in cluster.drover_json("events", str(job)) if "after" in e["detail"]]
    assert afters == ["dispatched", "running", "completing", "completed"]


def test_openapi_schema_describes_the_api(cluster: LocalCluster) -> None:
    status, body = cluster.client().transport.request("GET", "/openapi.json")
    assert status == 200
    import json

    document = json.loads(body)
    assert document["openapi"].startswith("3.")
    assert "/v1/jobs" in document["paths"] and "JobSubmission" in document["components"]["schemas"]


def test_typed_client_submits_and_waits(cluster: LocalCluster) -> None:
    from drover.protocol.api import JobSubmission

    with cluster.client() as client:
        ids = client.submit([JobSubmission(script="exit 0\n", workdir=str(cluster.workdir), name=f"c{i}")
                             for i in range(3)])
        assert len(ids) == 3
        for job_id in ids:
            info = client.wait(job_id, timeout_s=30)
            assert info is not None and info.state == "completed" and info.exit_status == 0
        assert {j.name for j in client.jobs(include_ended=True)} >= {"c0", "c1", "c2"}


def test_each_line_submits_many_jobs_in_one_request(cluster: LocalCluster) -> None:
    lines = cluster.workdir / "lines"
    lines.write_text("".join(f"echo {i}\n" for i in range(20)))
    ids = [int(x) for x in cluster.drover("submit", "--parsable", "--each-line", str(lines)).stdout.split()]
    assert len(ids) == 20 and ids == list(range(ids[0], ids[0] + 20))
    assert cluster.drover("wait", *map(str, ids)).returncode == 0
    assert (cluster.workdir / f"drover-{ids[7]}.out").read_text() == "7\n"


def test_output_files_are_created_in_the_working_directory(cluster: LocalCluster, tmp_path: Path) -> None:
    job = cluster.submit("--workdir", str(tmp_path), "--", "pwd")
    cluster.drover("wait", str(job))
    assert (tmp_path / f"drover-{job}.out").read_text().strip() == str(tmp_path)
    assert os.path.exists(tmp_path / f"drover-{job}.out")


def test_events_follow_until_the_job_ends_and_the_event_log_file_gets_every_event_once(cluster: LocalCluster) -> None:
    import json
    import subprocess
    import sys

    log = cluster.workdir / "events.jsonl"
    release = cluster.workdir / "go"
    job = cluster.submit("--event-log", str(log), "--", "bash", "-c", f"while [ ! -e {release} ]; do sleep 0.05; done")
    follower = subprocess.Popen([sys.executable, "-m", "drover", "events", "--follow", str(job)],
                                stdout=subprocess.PIPE, text=True, env=cluster.env)
    wait_until(lambda: cluster.drover_json("show", str(job))["state"] == "running", describe="running")
    release.touch()
    out, _ = follower.communicate(timeout=30)
    kinds = [line.split()[1] for line in out.splitlines()]
    assert kinds[0] == "submitted" and kinds[-1] == "job_ended" and "exited" in kinds
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["event"] for r in lines] == [e["kind"] for e in cluster.drover_json("events", str(job))]
    assert len({r["seq"] for r in lines}) == len(lines)


def test_run_streams_the_output_and_returns_the_exit_status(cluster: LocalCluster) -> None:
    result = cluster.drover("run", "--", "bash", "-c", "echo to-out; echo to-err >&2; exit 5", check=False)
    assert result.returncode == 5
    assert result.stdout == "to-out\n" and "to-err" in result.stderr
    assert cluster.drover("run", "--", "true").returncode == 0
    assert "give the command after --" in cluster.drover("run", "true", check=False).stderr


def test_suspend_freezes_a_running_job_and_resume_lets_it_go_on(cluster: LocalCluster) -> None:
    ticks = cluster.workdir / "ticks"
    job = cluster.submit("--", "bash", "-c", f"while :; do echo t >> {ticks}; sleep 0.05; done")
    wait_until(lambda: ticks.exists() and len(ticks.read_text().split()) > 2, describe="ticking")
    assert "1 suspended" in cluster.drover("suspend", str(job)).stdout
    wait_until(lambda: cluster.drover_json("show", str(job))["state"] == "suspended", describe="suspended")
    frozen = len(ticks.read_text().split())
    wait_until(lambda: len(ticks.read_text().split()) == frozen, describe="no more ticks")  # one may land late
    stopped_at = len(ticks.read_text().split())
    import time

    time.sleep(0.5)
    assert len(ticks.read_text().split()) == stopped_at
    assert "does not exist" in cluster.drover("resume", "999999", check=False).stderr
    cluster.drover("resume", str(job))
    wait_until(lambda: len(ticks.read_text().split()) > stopped_at + 2, describe="ticking again")
    assert cluster.drover_json("show", str(job))["state"] == "running"
    cluster.drover("signal", str(job), "KILL")
    assert cluster.drover("wait", str(job), check=False).returncode == 128 + 9


def test_a_job_over_its_memory_request_ends_out_of_memory(cluster: LocalCluster) -> None:
    job = cluster.submit("--mem", "100M", "--", "bash", "-c", "python3 -c 'b = bytearray(400 * 2**20)'; exit 0")
    cluster.drover("wait", str(job), check=False)
    shown = cluster.drover_json("show", str(job))
    if shown["tasks"][0]["attempts"][0]["usage"]["containment"] == "subreaper":
        import pytest

        pytest.skip("no memory cgroup is writable here, so --mem is not enforced")
    assert shown["state"] == "out_of_memory"
    assert shown["tasks"][0]["attempts"][0]["usage"]["cgroup_peak_memory_bytes"] > 90 * 2**20


def test_checkpoint_delivers_the_jobs_checkpoint_signal(cluster: LocalCluster) -> None:
    saved = cluster.workdir / "saved"
    job = cluster.submit("--checkpoint-signal", "USR2", "--", "bash", "-c",
                         f"trap 'echo state > {saved}' USR2; while :; do sleep 0.05; done")
    plain = cluster.submit("--", "sleep", "30")
    wait_until(lambda: cluster.drover_json("show", str(job))["state"] == "running", describe="running")
    import psutil

    job_pid = cluster.spool / f"{job}.0.1" / "job_pid"
    # The trap is set on the script's first line: once its loop runs a sleep, it is in place.
    wait_until(lambda: job_pid.exists() and psutil.Process(int(job_pid.read_text())).children(), describe="the loop")
    assert "asked to checkpoint" in cluster.drover("checkpoint", str(job)).stdout
    wait_until(lambda: saved.exists(), describe="the job to save its state")
    refused = cluster.drover("checkpoint", str(plain), check=False)
    assert refused.returncode == 1 and "has no checkpoint signal" in refused.stderr
    cluster.drover("cancel", str(job), str(plain))


def test_a_job_over_its_time_limit_ends_timeout(cluster: LocalCluster) -> None:
    job = cluster.submit("--time", "1s", "--", "sleep", "30")
    assert cluster.drover("wait", str(job), check=False).returncode != 0
    shown = cluster.drover_json("show", str(job))
    assert shown["state"] == "timeout"
    assert shown["tasks"][0]["attempts"][0]["timed_out"] is True


def test_a_job_that_exits_100_is_held_in_error_and_can_be_released(cluster: LocalCluster) -> None:
    flag = cluster.workdir / "fixed"
    job = cluster.submit("--", "bash", "-c", f"if [ -e {flag} ]; then exit 0; fi; exit 100")
    wait_until(lambda: cluster.drover_json("show", str(job))["state"] == "held", describe="the error hold")
    events = [e["kind"] for e in cluster.drover_json("events", str(job))]
    assert "held_in_error" in events
    flag.touch()
    cluster.drover("release", str(job))
    assert cluster.drover("wait", str(job)).returncode == 0
    assert len(cluster.drover_json("show", str(job))["tasks"][0]["attempts"]) == 2
