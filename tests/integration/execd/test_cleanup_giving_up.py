"""Cleanup never hangs: a step that keeps failing is given up after its bounded tries, said with
its tries and error in `drover show` (after the job ended too), and the final record and the
report go on (seeds/htcondor-starter-what-happens-when-a-job-exits.txt)."""

from __future__ import annotations

import contextlib
import stat
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until


def events(cluster: LocalCluster, job: int) -> list[dict[str, Any]]:
    return cluster.drover_json("events", str(job))  # type: ignore[no-any-return]


def given_up(cluster: LocalCluster, job: int) -> list[dict[str, Any]]:
    cleanup = cluster.drover_json("show", str(job))["tasks"][0]["attempts"][0].get("cleanup") or {}
    return cleanup.get("given_up") or []


def waiting_job(cluster: LocalCluster, release: Path) -> tuple[int, Path]:
    """A job that runs until `release` exists, and its attempt's spool directory, once running."""
    job = cluster.submit("--", "bash", "-c", f"while [ ! -e {release} ]; do sleep 0.05; done")
    wait_until(lambda: cluster.drover_json("show", str(job))["state"] == "running", describe="the job to run")
    return job, cluster.spool / f"{job}.0.1"


def test_an_exit_hook_that_keeps_failing_ends_the_job_and_shows_given_up_with_its_tries_and_error(
        tmp_path: Path) -> None:
    hook = tmp_path / "hook.sh"
    hook.write_text("#!/bin/bash\necho 'the site says no' >&2\nexit 3\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    cluster = LocalCluster(config_toml=f"[execd]\nexit_hook = \"{hook}\"\nexit_hook_tries = 2\n")
    try:
        cluster.start()
        job = cluster.submit("--", "true")
        assert cluster.drover("wait", str(job)).returncode == 0
        shown = cluster.drover_json("show", str(job))
        assert shown["state"] == "completed"
        cleanup = shown["tasks"][0]["attempts"][0]["cleanup"]
        assert cleanup["given_up"] == [{"step": "exit_hook", "tries": 2,
                                        "error": "the exit hook exited with status 3: the site says no"}]
        assert cleanup["error"] is None and cleanup["done"][-1] == "report"
        text = cluster.drover("show", str(job)).stdout
        assert "step exit_hook given up after 2 failed tries: the exit hook exited with status 3" in text
        logged = events(cluster, job)
        kinds = Counter(e["kind"] for e in logged)
        assert kinds["job_ended"] == 1 and kinds["exited"] == 1
        assert "exit_hook" not in [e["detail"]["step"] for e in logged if e["kind"] == "cleanup_step"]
    finally:
        print(cluster.logs())  # shown when the test fails
        assert not cluster.stop()


def test_a_final_record_the_node_cannot_write_is_given_up_and_the_report_still_goes(tmp_path: Path) -> None:
    release = tmp_path / "go"
    cluster = LocalCluster(config_toml="[execd]\nrecord_tries = 2\n")
    try:
        cluster.start()
        job, spool = waiting_job(cluster, release)
        (spool / "final").mkdir()  # where the final record goes: every write of it fails
        release.touch()
        assert cluster.drover("wait", str(job)).returncode == 0
        assert cluster.drover_json("show", str(job))["state"] == "completed"
        (record,) = given_up(cluster, job)
        assert record["step"] == "record" and record["tries"] == 2 and "Is a directory" in record["error"]
        assert Counter(e["kind"] for e in events(cluster, job))["job_ended"] == 1
        wait_until(lambda: not spool.exists(), describe="the spool to be removed")
    finally:
        print(cluster.logs())
        assert not cluster.stop()


@contextlib.contextmanager
def undeletable(directory: Path, moved_to: Path) -> Iterator[str]:
    """Something in `directory` that really makes its removal fail, even for root: an immutable
    file (chattr +i) or, where the filesystem has no such flag, a mount point. Undone afterwards,
    in `directory` or where it was moved to. Skips, saying why, when the machine can do neither."""
    inside = directory / "undeletable"
    inside.write_text("an operator must look at this\n")
    try:
        chattr = subprocess.run(["chattr", "+i", str(inside)], capture_output=True, text=True, check=False)
        chattr_said = chattr.stderr.strip() if chattr.returncode else ""
    except FileNotFoundError:
        chattr_said = "no chattr command"
    how = "mount point" if chattr_said else "immutable file"
    if chattr_said:
        inside.unlink()
        inside.mkdir()
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "drover-test", str(inside)],
                                 capture_output=True, text=True, check=False)
        if mounted.returncode != 0:
            reason = (f"cannot make a spool entry undeletable on this machine: chattr +i: {chattr_said}; "
                      f"mount: {mounted.stderr.strip()}")
            print(reason)
            pytest.skip(reason)
    try:
        yield how
    finally:
        for place in (inside, moved_to / "undeletable"):
            if place.exists():
                undo = ["umount", str(place)] if chattr_said else ["chattr", "-i", str(place)]
                subprocess.run(undo, capture_output=True, check=False)


def test_a_spool_that_cannot_be_removed_is_given_up_and_left_for_an_operator_and_the_job_ends_once(
        tmp_path: Path) -> None:
    release = tmp_path / "go"
    cluster = LocalCluster(config_toml="[execd]\nremove_tries = 2\n")
    try:
        cluster.start()
        job, spool = waiting_job(cluster, release)
        left = cluster.spool / f"removing.{job}.0.1"
        with undeletable(spool, left) as how:
            print(f"the spool holds an undeletable {how}")
            release.touch()
            assert cluster.drover("wait", str(job)).returncode == 0  # the report arrived

            def remove_given_up() -> list[dict[str, Any]]:
                return [e for e in events(cluster, job)
                        if e["kind"] == "cleanup_failed" and e["detail"].get("given_up")]

            (event,) = wait_until(remove_given_up, describe="the removal to be given up")
            assert event["detail"]["step"] == "remove" and str(left) in event["detail"]["error"]
            (record,) = given_up(cluster, job)
            assert record["step"] == "remove" and record["tries"] == 2 and str(left) in record["error"]
            assert "step remove given up after 2 failed tries" in cluster.drover("show", str(job)).stdout
            assert left.is_dir() and not spool.exists()  # aside: no restarted execd takes it for an attempt
            assert f"the spool is left at {left} for an operator" in (cluster.state_dir / "execd.log").read_text()

            # A new execd tries once more, says what is left, and counts nothing twice.
            said = f"cannot remove the spool {left}"
            before = (cluster.state_dir / "execd.log").read_text().count(said)
            cluster.kill("execd")
            cluster.start_execd()
            wait_until(lambda: (cluster.state_dir / "execd.log").read_text().count(said) > before,
                       describe="the new execd to name what is left")
            assert left.is_dir()
            second = cluster.submit("--", "true")
            assert cluster.drover("wait", str(second)).returncode == 0
            kinds = Counter(e["kind"] for e in events(cluster, job))
            assert kinds["job_ended"] == 1 and kinds["exited"] == 1
            assert cluster.drover_json("show", str(job))["state"] == "completed"
    finally:
        print(cluster.logs())
        assert not cluster.stop()
