"""A front end never starts a cluster, and never talks to another one than the user's.

Toil's Slurm batch system removes every XDG_* and DBUS_* variable before it runs sbatch, then
runs squeue, sacct and scontrol with the full environment. The personal cluster a user started
with XDG_STATE_HOME set must be the one all of them reach: `drover up` records it in a place of
the user's own that no environment variable moves (/run/user/UID, else /tmp/drover-UID), and a
command whose XDG_STATE_HOME was taken away finds it there. With no cluster answering, sbatch
fails in Slurm's words (and qsub in Grid Engine's) and starts nothing: only `drover submit`,
`drover run` and `drover up` start a personal cluster.

The commands run as a real unprivileged user made for the test, with Drover installed for all
users (the record is per uid; root's would be shared with every other test run on the machine)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.system_install import SystemInstall
from tests.helpers.users import run_as_user
from tests.helpers.wait import wait_until

TOIL_STRIPS = ("XDG_", "DBUS_")


@pytest.fixture
def user(users: tuple[str, str]) -> Iterator[str]:
    name = users[0]
    yield name
    uid = pwd.getpwnam(name).pw_uid
    # What the user's cluster leaves outside their home: its record, its attempts' spool.
    for directory in (f"/run/user/{uid}/drover", f"/tmp/drover-{uid}", f"/dev/shm/drover-{uid}"):
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def front_ends(user: str, system_install: SystemInstall) -> Path:
    """sbatch, squeue... installed where the user can run them, by the installed drover."""
    bin_dir = Path(f"/tmp/{user}-work/bin")
    bin_dir.parent.mkdir(mode=0o755, exist_ok=True)
    subprocess.run([system_install.drover, "compat", "install", str(bin_dir)], check=True, capture_output=True)
    (bin_dir / "drover").symlink_to(system_install.drover)
    for path in [bin_dir.parent, bin_dir, *bin_dir.iterdir()]:
        path.chmod(0o755)
    return bin_dir


def _env(user: str, bin_dir: Path, **extra: str) -> dict[str, str | None]:
    """A login's environment with the XDG and D-Bus variables a desktop session sets."""
    home = pwd.getpwnam(user).pw_dir
    return {"PATH": f"{bin_dir}:/usr/bin:/bin",
            "XDG_STATE_HOME": f"{home}/state-elsewhere", "XDG_RUNTIME_DIR": f"/tmp/{user}-work/runtime",
            "XDG_SESSION_ID": "3", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/bus", **extra}


def _stripped(env: dict[str, str | None]) -> dict[str, str | None]:
    """As Toil's slurm batch system calls sbatch: every XDG_* and DBUS_* variable removed."""
    return {key: (None if key.startswith(TOIL_STRIPS) else value) for key, value in env.items()}


def _run(user: str, env: dict[str, str | None], *argv: str) -> subprocess.CompletedProcess[str]:
    return run_as_user(user, [*argv], env=env, timeout=120)


def _drover(user: str, env: dict[str, str | None], *args: str) -> subprocess.CompletedProcess[str]:
    return _run(user, env, "drover", *args)


def test_sbatch_without_xdg_reaches_the_cluster_squeue_with_it_sees(user: str, front_ends: Path) -> None:
    """1. The user starts a personal cluster with XDG_STATE_HOME set (a desktop session).
    2. sbatch runs with every XDG_* and DBUS_* variable removed, as Toil runs it.
    3. squeue and `drover show`, with the full environment, see that very job: one cluster.
    4. No second cluster was made where the stripped environment would have put one."""
    env = _env(user, front_ends)
    home = Path(pwd.getpwnam(user).pw_dir)
    os.makedirs(f"/tmp/{user}-work/runtime", mode=0o700, exist_ok=True)
    shutil.chown(f"/tmp/{user}-work/runtime", user, user)
    try:
        up = _drover(user, env, "up", "--cpus", "1", "--memory", "512")
        assert up.returncode == 0, up.stderr
        state = home / "state-elsewhere" / "drover"
        assert (state / "api.sock").exists()

        submitted = _run(user, _stripped(env), "sbatch", "--parsable", "--hold", "--wrap", "true")
        assert submitted.returncode == 0, submitted.stderr
        job = submitted.stdout.strip()
        assert "started a personal cluster" not in submitted.stderr

        listed = _run(user, env, "squeue", "-h", "-o", "%i %T", "-j", job)
        assert listed.returncode == 0 and listed.stdout.split() == [job, "PENDING"], (listed.stdout, listed.stderr)
        shown = _drover(user, env, "show", job, "--json")
        assert shown.returncode == 0 and f'"id":{job},' in shown.stdout.replace(" ", ""), shown.stderr
        # Where the stripped environment alone would have put a personal cluster: nothing.
        assert not (home / ".local" / "state" / "drover").exists()
        # And the other way round: squeue without XDG sees it too.
        again = _run(user, _stripped(env), "squeue", "-h", "-o", "%i", "-j", job)
        assert again.stdout.split() == [job], again.stderr
    finally:
        _drover(user, env, "down")


def test_with_no_cluster_the_front_ends_fail_as_the_real_commands_and_start_nothing(
        user: str, front_ends: Path) -> None:
    env = _env(user, front_ends)
    home = Path(pwd.getpwnam(user).pw_dir)
    for stripped in (env, _stripped(env)):
        result = _run(user, stripped, "sbatch", "--wrap", "true")
        assert (result.returncode, result.stdout) == (1, ""), result
        assert result.stderr == ("sbatch: error: Batch job submission failed: Unable to contact slurm controller "
                                 "(connect failure)\n")
        result = _run(user, stripped, "srun", "true")
        assert result.returncode == 1
        assert "srun: error: Unable to allocate resources: Unable to contact slurm controller (connect failure)" \
            in result.stderr
        result = _run(user, stripped, "squeue")
        assert (result.returncode, result.stderr) == (
            1, "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n")
        result = _run(user, stripped, "qsub", "-b", "y", "true")
        assert result.returncode == 1
        assert result.stderr.startswith("error: commlib error: got select error (Connection refused)\n"
                                        "Unable to run job: unable to send message to qmaster")
        result = _run(user, stripped, "qstat")
        assert result.returncode == 1 and "unable to send message to qmaster" in result.stderr
    # Nothing started: no state directory anywhere, no process of the user's.
    assert not (home / ".local" / "state" / "drover").exists()
    assert not (home / "state-elsewhere").exists()
    uid = pwd.getpwnam(user).pw_uid
    import psutil

    wait_until(lambda: not [p for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid],
               describe="no process of the user's")
    # `drover submit` is the one that starts a personal cluster when none answers.
    submitted = _drover(user, env, "submit", "--hold", "--", "true")
    try:
        assert submitted.returncode == 0 and "started a personal cluster" in submitted.stderr, submitted.stderr
    finally:
        _drover(user, env, "down")
