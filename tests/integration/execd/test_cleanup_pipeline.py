"""After the job exits: the staged cleanup, retried until it succeeds, and exactly-once completion
(seeds/htcondor-starter-what-happens-when-a-job-exits.txt)."""

from __future__ import annotations

import socket
import stat
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Message
from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

from drover.execd import attempt_records
from drover.execd.cleanup import STEPS
from drover.execd.faults import PAUSE_BEFORE, pause_marker
from drover.spool import layout


class Inbox(Message):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[object] = []

    def handle_message(self, message: object) -> None:
        self.messages.append(message)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    """A real SMTP server on loopback that keeps what it receives."""
    inbox = Inbox()
    port = free_port()
    server = Controller(inbox, hostname="127.0.0.1", port=port)
    server.start()
    yield inbox, port
    server.stop()


def make_cluster(tmp_path: Path, smtp_port: int, hook: Path | None = None, extra: str = "") -> LocalCluster:
    config = f"[execd]\nsmtp_host = \"127.0.0.1\"\nsmtp_port = {smtp_port}\n" + extra
    if hook is not None:
        config += f"exit_hook = \"{hook}\"\n"
    return LocalCluster(config_toml=config)


def counting_hook(tmp_path: Path, fail_while: Path | None = None) -> tuple[Path, Path]:
    """An exit hook that appends the attempt of each final record it gets to a file."""
    runs = tmp_path / "hook-runs"
    hook = tmp_path / "hook.sh"
    condition = f"if [ -e {fail_while} ]; then echo 'hook says no' >&2; exit 3; fi\n" if fail_while else ""
    hook.write_text(f"#!/bin/bash\n{condition}python3 -c 'import json,sys; print(json.load(sys.stdin)[\"attempt\"])' >> {runs}\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    return hook, runs


def events(cluster: LocalCluster, job: int) -> list[dict[str, object]]:
    return cluster.drover_json("events", str(job))  # type: ignore[no-any-return]


@pytest.mark.parametrize("step", STEPS)
def test_killing_the_execd_before_any_step_reports_once_mails_once_and_logs_no_duplicates(
    tmp_path: Path, smtp: tuple[Inbox, int], step: str
) -> None:
    """1. A job ends; its execd pauses right before `step`. 2. kill -9 the execd there.
    3. Start a new execd: it finds the attempt in the spool and finishes the pipeline.
    The attempt is reported once, the mail sent once, each step logged once."""
    inbox, port = smtp
    hook, runs = counting_hook(tmp_path)
    cluster = make_cluster(tmp_path, port, hook)
    try:
        cluster.start_controller()
        cluster.start_execd(**{PAUSE_BEFORE: step})
        cluster.wait_node_up()
        job = cluster.submit("--mail-user", "me@example.org", "--mail-type", "END", "--", "echo", "hi")
        wait_until(lambda: list(cluster.spool.glob(f"{job}.0.1/{pause_marker(step)}")), describe=f"the pause before {step}")
        cluster.kill("execd")
        cluster.start_execd()
        assert cluster.drover("wait", str(job)).returncode == 0
        logged = events(cluster, job)
        assert Counter(e["kind"] for e in logged)["job_ended"] == 1
        exits = [e for e in logged if e["kind"] == "exited"]
        assert len(exits) == 1
        steps = [e["detail"]["step"] for e in logged if e["kind"] == "cleanup_step"]  # type: ignore[index]
        assert sorted(steps) == sorted(set(steps)) and "report" in steps
        wait_until(lambda: len(inbox.messages) >= 1, describe="the mail")
        assert len(inbox.messages) == 1
        assert "ended" in inbox.messages[0]["Subject"]  # type: ignore[index]
        # echo's max RSS is not the job's own, 0: the mail says not known (accounting.md, Max RSS)
        used = cluster.drover_json("show", str(job))["tasks"][0]["attempts"][0]["usage"]
        rss = used["max_rss_kib"] or "not known"
        body = inbox.messages[0].get_payload().replace("\r\n", "\n")  # type: ignore[attr-defined]
        assert f"\nmax RSS KiB    {rss}\n" in body
        assert runs.read_text().split() == [f"{job}.0.1"]
        wait_until(lambda: not (cluster.spool / f"{job}.0.1").exists(), describe="the spool to be removed")
        assert cluster.drover_json("show", str(job))["tasks"][0]["attempts"][0]["cleanup"]["done"][-1] == "report"
    finally:
        assert not cluster.stop()


def test_killing_the_execd_between_the_report_and_the_removal_of_a_job_without_mail_ends_it_once(
    tmp_path: Path, smtp: tuple[Inbox, int]
) -> None:
    """Without mail (nor a kept spool), the report's completion is not written on its own: the
    spool's removal comes right after it. A node killed in between reports again on its restart,
    and the controller takes that report once: one end, one exit, each step logged once."""
    _, port = smtp
    cluster = make_cluster(tmp_path, port)
    try:
        cluster.start_controller()
        cluster.start_execd(**{PAUSE_BEFORE: "remove"})
        cluster.wait_node_up()
        job = cluster.submit("--", "echo", "hi")
        wait_until(lambda: list(cluster.spool.glob(f"{job}.0.1/{pause_marker('remove')}")),
                   describe="the pause before remove")
        spool = layout.SpoolDir(str(cluster.spool), f"{job}.0.1")
        assert attempt_records.cleanup_progress(spool)["done"] == ["exit_hook", "stage_out", "record"]
        cluster.kill("execd")
        cluster.start_execd()
        assert cluster.drover("wait", str(job)).returncode == 0
        wait_until(lambda: not (cluster.spool / f"{job}.0.1").exists(), describe="the spool to be removed")
        logged = events(cluster, job)
        assert Counter(e["kind"] for e in logged)["job_ended"] == 1
        assert len([e for e in logged if e["kind"] == "exited"]) == 1
        steps = [e["detail"]["step"] for e in logged if e["kind"] == "cleanup_step"]  # type: ignore[index]
        assert sorted(steps) == sorted(set(steps)) and "report" in steps
        assert cluster.drover_json("show", str(job))["tasks"][0]["attempts"][0]["cleanup"]["done"][-1] == "report"
    finally:
        assert not cluster.stop()


def test_a_failing_exit_hook_keeps_the_job_completing_with_the_step_and_error_until_it_succeeds(
    tmp_path: Path, smtp: tuple[Inbox, int]
) -> None:
    _, port = smtp
    broken = tmp_path / "hook-broken"
    broken.touch()
    hook, runs = counting_hook(tmp_path, fail_while=broken)
    cluster = make_cluster(tmp_path, port, hook)
    try:
        cluster.start()
        job = cluster.submit("--", "true")

        def completing_with_error() -> dict[str, object] | None:
            shown = cluster.drover_json("show", str(job))
            cleanup = shown["tasks"][0]["attempts"][0].get("cleanup") or {}
            return cleanup if shown["state"] == "completing" and cleanup.get("tries", 0) >= 1 else None

        cleanup = wait_until(completing_with_error, timeout=60, describe="the pipeline to fail")
        assert cleanup["step"] == "exit_hook" and "hook says no" in str(cleanup["error"])
        text = cluster.drover("show", str(job)).stdout
        assert "COMPLETING" in text and "step exit_hook failed" in text
        broken.unlink()
        assert cluster.drover("wait", str(job)).returncode == 0
        assert runs.read_text().split() == [f"{job}.0.1"]
        failures = [e for e in events(cluster, job) if e["kind"] == "cleanup_failed"]
        assert len(failures) >= 1
    finally:
        assert not cluster.stop()


def test_the_report_arrives_once_when_the_controller_comes_back(tmp_path: Path, smtp: tuple[Inbox, int]) -> None:
    """1. A job runs. 2. The controller is killed. 3. The job ends: the execd's report (step 5)
    fails and is retried. 4. The controller comes back: the report arrives, once."""
    _, port = smtp
    release = tmp_path / "go"
    cluster = make_cluster(tmp_path, port)
    try:
        cluster.start()
        job = cluster.submit("--", "bash", "-c", f"while [ ! -e {release} ]; do sleep 0.05; done")
        wait_until(lambda: cluster.drover_json("show", str(job))["state"] == "running", describe="running")
        cluster.kill("controller")
        release.touch()
        wait_until(lambda: "step report failed" in (cluster.state_dir / "execd.log").read_text()
                   or "cleanup step report failed" in (cluster.state_dir / "execd.log").read_text(),
                   describe="the report to fail while the controller is down")
        cluster.start_controller()
        assert cluster.drover("wait", str(job)).returncode == 0
        logged = events(cluster, job)
        assert Counter(e["kind"] for e in logged)["job_ended"] == 1
    finally:
        assert not cluster.stop()


def test_with_the_mail_relay_down_the_job_completes_at_once_and_the_mail_is_retried_then_given_up(tmp_path: Path) -> None:
    cluster = make_cluster(tmp_path, free_port(), extra="mail_tries = 2\n")
    try:
        cluster.start()
        job = cluster.submit("--mail-user", "me@example.org", "--", "true")
        assert cluster.drover("wait", str(job)).returncode == 0  # the mail comes after the job's end

        def failures() -> list[dict[str, object]]:
            return [e for e in events(cluster, job) if e["kind"] == "cleanup_failed"]

        wait_until(lambda: any("mail given up" in str(e["detail"]["error"]) for e in failures()),  # type: ignore[index]
                   describe="the mail to be given up")
        assert all(e["detail"]["step"] == "mail" for e in failures())  # type: ignore[index]
    finally:
        assert not cluster.stop()


def test_a_kept_spool_stays_on_the_node(tmp_path: Path, smtp: tuple[Inbox, int]) -> None:
    _, port = smtp
    cluster = make_cluster(tmp_path, port)
    try:
        cluster.start()
        job = cluster.submit("--keep-spool", "--", "echo", "kept")
        cluster.drover("wait", str(job))
        kept = cluster.spool / "kept" / f"{job}.0.1"
        wait_until(lambda: (kept / "final").exists(), describe="the kept spool")
        assert {"config", "job_script", "pid", "job_pid", "exit_status", "final"} <= {p.name for p in kept.iterdir()}
    finally:
        assert not cluster.stop()


def test_an_array_mails_when_its_first_task_begins_and_once_when_its_last_task_ends(
    tmp_path: Path, smtp: tuple[Inbox, int]
) -> None:
    inbox, port = smtp
    cluster = LocalCluster(config_toml=f"[controller]\nsmtp_host = \"127.0.0.1\"\nsmtp_port = {port}\n"
                                       f"[execd]\nsmtp_host = \"127.0.0.1\"\nsmtp_port = {port}\n")
    try:
        cluster.start()
        job = cluster.submit("--array", "1-4", "--mail-user", "me@example.org", "--mail-type", "BEGIN,END",
                             "--", "bash", "-c", "exit $((DROVER_ARRAY_TASK_ID == 3))")
        cluster.drover("wait", str(job), check=False)
        wait_until(lambda: len(inbox.messages) >= 2, describe="two mails")
        subjects = sorted(str(m["Subject"]) for m in inbox.messages)  # type: ignore[index]
        assert subjects == [f"Drover array job {job} (bash) failed", f"Drover job {job} (bash) started"]
        body = next(m for m in inbox.messages if "array" in str(m["Subject"])).get_payload()  # type: ignore[index, attr-defined]
        assert "1 failed" in body and "3 completed" in body
        wait_until(lambda: any(e["kind"] == "mail_sent" for e in events(cluster, job)), describe="mail events")
    finally:
        assert not cluster.stop()


def test_a_requeued_task_mails_requeue_when_asked(tmp_path: Path, smtp: tuple[Inbox, int]) -> None:
    inbox, port = smtp
    cluster = make_cluster(tmp_path, port)
    flag = tmp_path / "again"
    try:
        cluster.start()
        job = cluster.submit("--mail-user", "me@example.org", "--mail-type", "ALL", "--", "bash", "-c",
                             f"if [ -e {flag} ]; then exit 0; fi; touch {flag}; exit 99")
        assert cluster.drover("wait", str(job)).returncode == 0
        wait_until(lambda: len(inbox.messages) >= 2, describe="the requeue and end mails")
        subjects = [str(m["Subject"]) for m in inbox.messages]  # type: ignore[index]
        assert f"Drover job {job} (bash) was requeued" in subjects and f"Drover job {job} (bash) ended" in subjects
    finally:
        assert not cluster.stop()


def test_a_running_job_requeued_by_request_is_mailed_as_requeued_not_failed(tmp_path: Path,
                                                                            smtp: tuple[Inbox, int]) -> None:
    """The node classifies the end with the controller's facts: a stop asked for by a requeue is
    a requeue (the shepherd records only that it was asked to stop)."""
    inbox, port = smtp
    cluster = make_cluster(tmp_path, port)
    started, second = tmp_path / "started", tmp_path / "second"
    try:
        cluster.start()
        job = cluster.submit("--mail-user", "me@example.org", "--mail-type", "END,FAIL,REQUEUE", "--", "bash", "-c",
                             f"if [ -e {started} ]; then touch {second}; exit 0; fi; touch {started}; sleep 300")
        wait_until(started.exists, describe="the first attempt to run")
        assert cluster.drover("requeue", str(job)).returncode == 0
        assert cluster.drover("wait", str(job)).returncode == 0 and second.exists()
        wait_until(lambda: len(inbox.messages) >= 2, describe="the requeue and end mails")
        # In either order: each attempt's node sends its own mail as its cleanup goes, and the
        # second attempt may start, end and mail while the first's cleanup is still stopping it.
        subjects = sorted(str(m["Subject"]) for m in inbox.messages)  # type: ignore[index]
        assert subjects == [f"Drover job {job} (bash) ended", f"Drover job {job} (bash) was requeued"], subjects
    finally:
        assert not cluster.stop()


def test_an_exit_hook_that_keeps_failing_is_given_up_and_the_job_ends(tmp_path: Path, smtp: tuple[Inbox, int]) -> None:
    """After exit_hook_tries failures the hook is given up, said in a cleanup_failed event, and
    the pipeline goes on: the job is not held in COMPLETING for ever."""
    _, port = smtp
    broken = tmp_path / "hook-broken"
    broken.touch()
    hook, runs = counting_hook(tmp_path, fail_while=broken)
    cluster = make_cluster(tmp_path, port, hook, extra="exit_hook_tries = 2\n")
    try:
        cluster.start()
        job = cluster.submit("--", "true")
        assert cluster.drover("wait", str(job)).returncode == 0
        assert cluster.drover_json("show", str(job))["state"] == "completed"
        failures = [e for e in events(cluster, job) if e["kind"] == "cleanup_failed"]
        assert any("exit_hook given up" in str(e["detail"]["error"]) for e in failures), failures  # type: ignore[index]
        assert not runs.exists()
    finally:
        print(cluster.logs())  # shown when the test fails: the pipeline's own account of each try
        assert not cluster.stop()
