"""Files for hosts that do not share a filesystem with the submitter: stage-in, stage-out and
output retrieval through the controller."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until

from drover.controller.nodes.staged_files import PARTIAL_DIR


def test_stage_in_and_out_with_a_working_directory_the_submit_side_cannot_see(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """1. Submit from a directory with an input file, staging it in; the job runs in a scratch
    directory on its node (not the submit directory). 2. It writes results. 3. `drover fetch`
    brings the declared outputs back; `drover logs` shows its output through the controller."""
    submit_dir = tmp_path / "submit"
    submit_dir.mkdir()
    (submit_dir / "input.txt").write_text("3 4\n")
    script = submit_dir / "job.sh"
    script.write_text("read a b < input.txt\necho $((a * b)) > result.txt\nmkdir -p out; echo side > out/more.dat\n"
                      "echo ran in $PWD; echo oops >&2\n")
    job = cluster.submit("--stage-in", str(submit_dir / "input.txt"), "--stage-out", "result.txt",
                         "--stage-out", "out/*.dat", str(script), cwd=submit_dir)
    assert cluster.drover("wait", str(job)).returncode == 0
    assert not (submit_dir / "result.txt").exists()  # the job ran elsewhere
    assert not list(submit_dir.glob("drover-*.out"))
    fetched = cluster.drover("fetch", str(job), cwd=submit_dir).stdout.split()
    assert (submit_dir / "result.txt").read_text() == "12\n"
    assert (submit_dir / "out" / "more.dat").read_text() == "side\n"
    assert str(submit_dir / "result.txt") in fetched
    output = cluster.drover("logs", str(job)).stdout
    assert output.startswith("ran in ") and str(submit_dir) not in output and "oops" in output
    assert str(cluster.spool) in output  # the scratch directory lived in the node's spool
    staged = [e for e in cluster.drover_json("events", str(job)) if e["kind"] == "staged_out"]
    assert len(staged) == 1 and sorted(staged[0]["detail"]["files"]) == [f"drover-{job}.out", "out/more.dat", "result.txt"]


def test_stage_in_size_and_names_are_checked_at_submission(cluster: LocalCluster, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    with open(big, "wb") as file:
        file.truncate(17 * 1024 * 1024)
    result = cluster.drover("submit", "--stage-in", str(big), "--", "true", check=False)
    assert result.returncode == 1 and "more than the limit of 16 MiB" in result.stderr
    missing = cluster.drover("submit", "--stage-in", str(tmp_path / "nope"), "--", "true", check=False)
    assert "cannot read" in missing.stderr
    escaping = cluster.drover("submit", "--stage-out", "../x", "--", "true", check=False)
    assert escaping.returncode == 1 and "inside the working directory" in escaping.stderr
    assert cluster.drover_json("status", "--all") == []


def test_fetch_without_staged_files_says_so(cluster: LocalCluster) -> None:
    job = cluster.submit("--", "true")
    cluster.drover("wait", str(job))
    result = cluster.drover("fetch", str(job), check=False)
    assert result.returncode == 1 and "no staged-out files" in result.stderr
    assert os.path.exists(cluster.workdir / f"drover-{job}.out")


def test_output_files_the_controller_cannot_keep_are_given_up_and_the_job_ends(tmp_path: Path) -> None:
    """Bounded like every cleanup step: the node tries stage_out_tries times, then gives the files
    up in an event that says why, and the job's end is reported all the same."""
    cluster = LocalCluster(config_toml="[execd]\nstage_out_tries = 1\n")
    (cluster.state_dir / "files").write_text("not a directory: the controller cannot keep files here\n")
    try:
        cluster.start()
        job = cluster.submit("--stage-out", "result.txt", "--", "bash", "-c", "echo 1 > result.txt")
        assert cluster.drover("wait", str(job), timeout=90).returncode == 0
        failed = [e for e in cluster.drover_json("events", str(job)) if e["kind"] == "cleanup_failed"]
        assert [e["detail"]["step"] for e in failed] == ["stage_out"]
        assert "stage_out given up: the controller cannot keep it: Not a directory" in failed[0]["detail"]["error"]
        assert "cannot keep a chunk of the files attempt" in (cluster.state_dir / "controller.log").read_text()
    finally:
        assert not cluster.stop()


def test_a_40_mib_stage_out_arrives_whole_and_the_node_channel_stays_up(cluster: LocalCluster, tmp_path: Path) -> None:
    """1. A job sleeps on the node, holding its channel's other work. 2. Another job writes
    40 MiB of random bytes and stages them out: more than one frame of the node channel may
    carry, so the file travels in chunks. 3. `drover fetch` brings back the same bytes (the
    digests match). 4. The node never lost its channel, and the sleeping job ran on untouched."""
    gate = tmp_path / "go"
    sleeper = cluster.submit("--", "bash", "-c", f"while [ ! -e {gate} ]; do sleep 0.1; done")
    wait_until(lambda: cluster.drover_json("show", str(sleeper))["tasks"][0]["state"] == "running",
               describe="the sleeping job to run")
    job = cluster.submit("--stage-out", "big.bin", "--stage-out", "big.sha256", "--", "bash", "-c",
                         "head -c 41943040 /dev/urandom > big.bin && sha256sum big.bin > big.sha256")
    assert cluster.drover("wait", str(job), timeout=120).returncode == 0
    fetched = tmp_path / "fetched"
    cluster.drover("fetch", str(job), "--to", str(fetched))
    data = (fetched / "big.bin").read_bytes()
    assert len(data) == 40 * 1024 * 1024
    assert hashlib.sha256(data).hexdigest() == (fetched / "big.sha256").read_text().split()[0]
    events = cluster.drover_json("events")
    assert [e for e in events if e["kind"] == "node_disconnected"] == []
    assert not os.listdir(cluster.state_dir / "files" / PARTIAL_DIR)  # nothing half-kept is left
    gate.touch()
    assert cluster.drover("wait", str(sleeper)).returncode == 0
    task = cluster.drover_json("show", str(sleeper))["tasks"][0]
    assert task["state"] == "completed" and len(task["attempts"]) == 1


def test_a_stage_out_over_the_controllers_limit_is_refused_whole_with_a_note(tmp_path: Path) -> None:
    """The controller keeps at most max_stage_out_bytes per attempt, whatever the node sends: a
    file that would go over it is refused, named with the limit in the job's staged_out event,
    and nothing of it is left half-written on the controller. The files under it arrive."""
    cluster = LocalCluster(config_toml=f"[controller]\nmax_stage_out_bytes = {3 * 1024 * 1024}\n")
    try:
        cluster.start()
        job = cluster.submit("--stage-out", "small.txt", "--stage-out", "big.bin", "--", "bash", "-c",
                             "echo kept > small.txt && head -c 5242880 /dev/urandom > big.bin")
        assert cluster.drover("wait", str(job), timeout=120).returncode == 0
        staged = [e for e in cluster.drover_json("events", str(job)) if e["kind"] == "staged_out"]
        assert len(staged) == 1 and sorted(staged[0]["detail"]["files"]) == [f"drover-{job}.out", "small.txt"]
        (refused,) = staged[0]["detail"]["refused"]
        assert refused.startswith("big.bin: ") and "max_stage_out_bytes" in refused and "3 MiB" in refused
        files = cluster.state_dir / "files"
        assert sorted(os.listdir(files / f"{job}.0.1")) == [f"drover-{job}.out", "small.txt"]
        assert not os.listdir(files / PARTIAL_DIR)
        assert cluster.drover_json("show", str(job))["tasks"][0]["state"] == "completed"
    finally:
        assert not cluster.stop()


def test_a_stage_out_over_the_nodes_limit_is_not_sent_and_the_event_says_why(tmp_path: Path) -> None:
    """The node's own limit (stage_out_limit_bytes): the shepherd copies nothing of a file that
    would go over it, and the job's staged_out event names it with the limit and its key."""
    cluster = LocalCluster(config_toml=f"[execd]\nstage_out_limit_bytes = {3 * 1024 * 1024}\n")
    try:
        cluster.start()
        job = cluster.submit("--stage-out", "big.bin", "--", "bash", "-c", "head -c 5242880 /dev/zero > big.bin")
        assert cluster.drover("wait", str(job), timeout=120).returncode == 0
        (staged,) = [e for e in cluster.drover_json("events", str(job)) if e["kind"] == "staged_out"]
        assert staged["detail"]["skipped"] == [
            "big.bin: over the node's limit of 3 MiB staged out per attempt (stage_out_limit_bytes in [execd] of "
            "drover.toml); not sent"]
        assert not os.path.exists(cluster.state_dir / "files" / f"{job}.0.1" / "big.bin")
    finally:
        assert not cluster.stop()
