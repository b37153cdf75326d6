"""The job runs as its owner when the shepherd is root (Accelerator steps 6, 11, 14-17)."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.shared_dirs import directory_in_tmp
from tests.helpers.spools import exit_status, make_spool


def identity_of(name: str) -> dict[str, object]:
    entry = pwd.getpwnam(name)
    return {"user": name, "uid": entry.pw_uid, "gid": entry.pw_gid,
            "groups": sorted(set(os.getgrouplist(name, entry.pw_gid))), "home": entry.pw_dir,
            "shell": entry.pw_shell}


def job_dir(name: str) -> Path:
    path = Path(f"/tmp/{name}-work")
    path.mkdir(exist_ok=True)
    entry = pwd.getpwnam(name)
    os.chown(path, entry.pw_uid, entry.pw_gid)
    return path


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A spool root the job's owner can traverse (pytest's own tmp_path sits in a 0700 dir)."""
    with directory_in_tmp("drv-spool-", 0o711) as root:
        yield root


def spool_for(tmp_path: Path, name: str, script: str, **overrides: object) -> Path:
    workdir = job_dir(name)
    spool = make_spool(tmp_path, script, workdir=str(workdir), stdout=str(workdir / "out.txt"),
                       identity=identity_of(name), owner=name, **overrides)
    os.chmod(spool, 0o711)
    entry = pwd.getpwnam(name)
    os.chown(spool / "job_script", entry.pw_uid, entry.pw_gid)
    return spool


def test_the_job_runs_as_its_owner_with_the_owners_environment_and_files(tmp_path: Path, users: tuple[str, str]) -> None:
    alice, _ = users
    spool = spool_for(tmp_path, alice, "id -un; id -u; echo $HOME $USER $LOGNAME $SHELL; touch made-by-job\n",
                      environment={"PATH": os.environ["PATH"], "HOME": "/root", "USER": "root"})
    assert subprocess.run([sys.executable, "-m", "drover.shepherd", str(spool)], timeout=30).returncode == 0
    assert exit_status(spool)["exit_code"] == 0
    entry = pwd.getpwnam(alice)
    out = Path(f"/tmp/{alice}-work/out.txt")
    lines = out.read_text().splitlines()
    assert lines[0] == alice and lines[1] == str(entry.pw_uid)
    assert lines[2] == f"{entry.pw_dir} {alice} {alice} {entry.pw_shell}"
    assert out.stat().st_uid == entry.pw_uid  # the output file is the owner's
    assert Path(f"/tmp/{alice}-work/made-by-job").stat().st_uid == entry.pw_uid


def diagnostics_script(root: Path, line: str) -> Path:
    """A diagnostics script any user may run (it runs as the node's diagnostics user)."""
    script = root / "diag.sh"
    script.write_text(f"#!/bin/bash\n{line}\n")
    script.chmod(0o755)
    return script


def test_a_directory_the_owner_cannot_enter_fails_after_retries_and_runs_the_diagnostics(
    tmp_path: Path, users: tuple[str, str]
) -> None:
    """Accelerator step 17: "the subtasker calls vov_diagnostics_chdir with arguments ID and DIR
    (the directory that could not be accessed)": the job's id and the directory, exactly two
    arguments; the attempt, the owner and the reason are in its environment."""
    alice, bob = users
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    diagnostics = diagnostics_script(
        tmp_path, 'echo "diagnosed $# [$1] [$2] as $(id -un): $DROVER_ATTEMPT $DROVER_USER $DROVER_REASON"')
    spool = spool_for(tmp_path, alice, "true\n", diagnostics_chdir=str(diagnostics),
                      diagnostics_identity=identity_of(bob))
    config = (spool / "config").read_text().replace(f"/tmp/{alice}-work\"", f"{locked}\"", 1)
    (spool / "config").write_text(config)
    subprocess.run([sys.executable, "-m", "drover.shepherd", str(spool)], timeout=30)
    record = exit_status(spool)
    assert record["failure"] == f"cannot enter {locked}: Permission denied"
    job_id = spool.name.split(".")[0]
    assert (f"diagnosed 2 [{job_id}] [{locked}] as {bob}: {spool.name} {alice} cannot enter {locked}: "
            "Permission denied") in (spool / "error").read_text()


def test_accelerator_step_14_the_setuid_diagnostics_run_as_the_nodes_diagnostics_user_not_root(
    tmp_path: Path, users: tuple[str, str]
) -> None:
    """Accelerator step 14: "If the switch of user identity fails, the system calls the
    diagnostics script vov_diagnistics_setuid (not as root, but as the owner of Accelerator)".
    A group id the kernel refuses makes setgroups fail every time: the switch is retried, then
    the script runs as the node's diagnostics user (here bob), with that user's groups."""
    alice, bob = users
    diagnostics = diagnostics_script(tmp_path, 'echo "setuid diagnosed $2: $3"; echo "uid $(id -u) gid $(id -g)"')
    spool = spool_for(tmp_path, alice, "true\n", diagnostics_setuid=str(diagnostics), identity_tries=3,
                      identity_retry_s=0.05, diagnostics_identity=identity_of(bob))
    config = json.loads((spool / "config").read_text())
    config["identity"]["groups"] = [4294967295]  # (gid_t) -1: never a valid group
    (spool / "config").write_text(json.dumps(config))
    subprocess.run([sys.executable, "-m", "drover.shepherd", str(spool)], timeout=30)
    record = exit_status(spool)
    assert record["failure"].startswith(f"cannot switch to user {alice}: ")
    error = (spool / "error").read_text()
    assert f"setuid diagnosed {alice}" in error
    entry = pwd.getpwnam(bob)
    assert f"uid {entry.pw_uid} gid {entry.pw_gid}" in error
    assert not (spool / "job_pid").exists()


def test_accelerator_step_14_without_a_diagnostics_user_a_root_shepherd_does_not_run_the_script(
    tmp_path: Path, users: tuple[str, str]
) -> None:
    """Never as root: a node with no account to run the diagnostics as says so in the error."""
    alice, _ = users
    ran = tmp_path / "ran"
    diagnostics = diagnostics_script(tmp_path, f"touch {ran}")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o700)
    spool = spool_for(tmp_path, alice, "true\n", diagnostics_chdir=str(diagnostics), diagnostics_identity=None)
    config = (spool / "config").read_text().replace(f"/tmp/{alice}-work\"", f"{locked}\"", 1)
    (spool / "config").write_text(config)
    subprocess.run([sys.executable, "-m", "drover.shepherd", str(spool)], timeout=30)
    assert exit_status(spool)["failure"] == f"cannot enter {locked}: Permission denied"
    assert "was not run: this node has no user to run it as but root" in (spool / "error").read_text()
    assert not ran.exists()
