"""jobd's life of a queued job (seeds/jobd-life-of-a-queued-job.txt), as `drover submit` does it:
many jobs in one script, --zap, --done-output, --mail-output, and a queue's mail_finished."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until
from tests.integration.execd.test_cleanup_pipeline import Inbox, smtp  # noqa: F401  # the SMTP server fixture

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


def test_jobd_zapthisjob_removes_the_jobs_output_when_it_ends(cluster: LocalCluster) -> None:
    """jobd's zapthisjob: "delete script and script output on node after computation finishes".
    The script is the spool's copy, removed in any case; --zap removes the output files too."""
    job = cluster.submit("--zap", "-e", "err-%j.txt", "--", "bash", "-c", "echo out; echo err >&2")
    assert cluster.drover("wait", str(job)).returncode == 0
    assert cluster.drover_json("show", str(job))["state"] == "completed"
    assert not (cluster.workdir / f"drover-{job}.out").exists()
    assert not (cluster.workdir / f"err-{job}.txt").exists()
    kept = cluster.drover("submit", "--zap", "--keep-spool", "--", "true", check=False)
    assert kept.returncode == 1 and "--zap removes what the job leaves on its node" in kept.stderr


def test_jobd_doneoutput_puts_stdout_and_stderr_in_one_file_when_the_job_is_done(cluster: LocalCluster) -> None:
    """jobd's doneoutput: while the job runs, its output goes to its --output file; once it is
    done (its epilog too), stdout and stderr are in the --done-output file, whole, and the
    --output file is gone."""
    release = cluster.workdir / "release"
    job = cluster.submit("--done-output", "done-%j.txt", "--epilog", "echo epilog",
                         "--", "bash", "-c", f"echo out; echo err >&2; while [ ! -e {release} ]; do sleep 0.1; done")
    done = cluster.workdir / f"done-{job}.txt"
    running = cluster.workdir / f"drover-{job}.out"
    wait_until(lambda: running.exists() and running.read_text() == "out\nerr\n", describe="the job's output")
    assert not done.exists()
    release.touch()
    assert cluster.drover("wait", str(job)).returncode == 0
    assert done.read_text() == "out\nerr\nepilog\n"
    assert not running.exists()
    refused = cluster.drover("submit", "--done-output", "d.txt", "-e", "e.txt", "--", "true", check=False)
    assert refused.returncode == 1 and "--done-output holds stdout and stderr together" in refused.stderr


def test_jobd_mailoutput_sends_the_output_with_the_end_mail_and_zap_removes_it(
    tmp_path: Path, smtp: tuple[Inbox, int]  # noqa: F811
) -> None:
    """jobd's mailoutput (with zapthisjob): the owner gets the job's output in the end mail, and
    the output file is gone from the node."""
    inbox, port = smtp
    cluster = LocalCluster(config_toml=f"[execd]\nsmtp_host = \"127.0.0.1\"\nsmtp_port = {port}\n")
    try:
        cluster.start()
        job = cluster.submit("--mail-output", "--mail-user", "me@example.org", "--zap",
                             "--", "bash", "-c", "echo 'the answer is 42'; echo 'a warning' >&2; exit 3")
        cluster.drover("wait", str(job), check=False)
        wait_until(lambda: len(inbox.messages) >= 1, describe="the end mail")
        message = inbox.messages[0]
        assert str(message["Subject"]) == f"Drover job {job} (bash) failed"  # type: ignore[index]
        body = message.get_payload().replace("\r\n", "\n")  # type: ignore[attr-defined]
        assert "exit code      3" in body
        assert "The job's output:\n\nthe answer is 42\na warning\n" in body
        assert not (cluster.workdir / f"drover-{job}.out").exists()
    finally:
        assert not cluster.stop()


def test_jobd_mailfinished_mails_once_when_the_last_job_of_a_queue_finishes(
    tmp_path: Path, smtp: tuple[Inbox, int]  # noqa: F811
) -> None:
    """jobd's mailfinished: "mail should be sent when last job in queue finishes computation".

    1. a queue `batch` with mail_finished, owned by `ops`; 2. two jobs in it, submitted together,
    the second still running when the first ends: no mail; 3. the second ends: one mail, to the queue's owner;
    4. a job of the default queue (without mail_finished) mails nobody."""
    inbox, port = smtp
    cluster = LocalCluster(config_toml=f"[controller]\nsmtp_host = \"127.0.0.1\"\nsmtp_port = {port}\n"
                                       "[queues.batch]\nmail_finished = true\nowner = \"ops\"\n")
    try:
        cluster.start()
        release = cluster.workdir / "release"
        (cluster.workdir / "two.sh").write_text(f"#DROVER -q batch\ntrue\n#NEXT\n"
                                                f"while [ ! -e {release} ]; do sleep 0.1; done\n")
        first = int(cluster.drover("submit", "--parsable", "two.sh").stdout.split()[0])
        second = first + 1
        assert cluster.drover("wait", str(first)).returncode == 0
        plain = cluster.submit("--", "true")
        assert cluster.drover("wait", str(plain)).returncode == 0
        assert inbox.messages == []
        release.touch()
        assert cluster.drover("wait", str(second)).returncode == 0
        wait_until(lambda: len(inbox.messages) >= 1, describe="the queue's mail")
        message = inbox.messages[0]
        assert str(message["Subject"]) == "Drover queue batch: its last job finished"  # type: ignore[index]
        assert str(message["To"]) == "ops"  # type: ignore[index]
        assert f"{second} (two.sh)" in message.get_payload()  # type: ignore[attr-defined]
        assert "mail at end  yes" in cluster.drover("queue", "show", "batch").stdout
        wait_until(lambda: any(e["kind"] == "mail_sent" for e in cluster.drover_json("events", str(second))),
                   describe="the mail's event")
        assert len(inbox.messages) == 1
    finally:
        assert not cluster.stop()
