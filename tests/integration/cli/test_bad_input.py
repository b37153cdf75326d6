"""Bad input that needs more than one line of the corpus (tests/data/bad_inputs.tsv, run by
tests/integration/test_bad_input_corpus.py): a file's mode, a job that ended, several ids at
once, no cluster at all, a FIFO."""

from __future__ import annotations

import pytest
from tests.helpers.cluster import LocalCluster


def _store_snapshot(cluster: LocalCluster) -> object:
    return (cluster.drover_json("status", "--all"), cluster.drover_json("events"))


def test_unreadable_script_is_refused(cluster: LocalCluster) -> None:
    script = cluster.workdir / "secret.sh"
    script.write_text("true\n")
    script.chmod(0)
    result = cluster.drover("submit", str(script), check=False)
    import os

    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode; the unreadable case needs a normal user")
    assert result.returncode != 0 and "cannot read" in result.stderr


def test_cancelling_an_ended_job_is_an_error_and_changes_nothing(cluster: LocalCluster) -> None:
    job = cluster.submit("--", "true")
    cluster.drover("wait", str(job))
    before = _store_snapshot(cluster)
    result = cluster.drover("cancel", str(job), check=False)
    assert result.returncode == 1
    assert f"job {job} has already ended (completed)" in result.stderr
    assert _store_snapshot(cluster) == before


def test_cancel_of_several_ids_reports_each_and_fails_if_any_failed(cluster: LocalCluster) -> None:
    held = cluster.submit("--hold", "--", "true")
    result = cluster.drover("cancel", str(held), "999999", check=False)
    assert result.returncode == 1
    assert f"{held}: 1 pending cancelled" in result.stdout
    assert "job 999999 does not exist" in result.stderr
    assert cluster.drover_json("show", str(held))["state"] == "cancelled"


def test_commands_without_a_cluster_say_how_to_start_one(tmp_path: object) -> None:
    import os
    import subprocess
    import sys

    env = dict(os.environ, DROVER_SOCKET="/tmp/drover-no-such-cluster.sock")
    result = subprocess.run([sys.executable, "-m", "drover", "status"], capture_output=True, text=True, env=env)
    assert result.returncode == 2
    assert "no Drover cluster answers at /tmp/drover-no-such-cluster.sock; start one with `drover up`" in result.stderr


def test_a_script_that_is_a_fifo_or_not_utf8_is_refused_at_once(cluster: LocalCluster) -> None:
    import os

    os.mkfifo(cluster.workdir / "fifo.sh")
    (cluster.workdir / "latin1.sh").write_bytes(b"echo caf\xe9\n")
    for script, message in (("fifo.sh", "fifo.sh is not a regular file"), ("latin1.sh", "is not UTF-8 text")):
        result = cluster.drover("submit", script, check=False, timeout=20)  # a FIFO must not hang it
        assert result.returncode == 1 and message in result.stderr, result.stderr
    empty = cluster.drover("submit", "-J", "", "--", "true", check=False)
    assert empty.returncode != 0 and "a job name must not be empty" in empty.stderr
    assert cluster.drover_json("status", "--all") == []
