"""Adversarial: two real users of a shared cluster, each running the installed `drover`, try to
make root (or the other user) write, read, create or follow files they could not themselves.

Every path a user names (working directory, output and error files, stage-in and stage-out
names, the event log) is tried with: a root-only file, the other user's private file, `..`,
absolute paths, symbolic and hard links to them, and a link swapped in after submission. Each
attempt is either refused or carried out with the user's own rights: nothing root-only or of the
other user's is ever read, written, created or leaked. See docs/security.md.
"""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.wait import wait_until

SECRET = "root-only secret\n"


@pytest.fixture
def root_secret() -> Iterator[Path]:
    """A file only root may read or write."""
    path = Path(f"/var/tmp/drover-secret-{uuid.uuid4().hex[:8]}")
    path.write_text(SECRET)
    os.chmod(path, 0o600)
    yield path
    path.unlink(missing_ok=True)


@pytest.fixture
def homes(users: tuple[str, str]) -> tuple[Path, Path]:
    """Each user's work directory (theirs, 0700), and in the victim's a private file."""
    made = []
    for user in users:
        entry = pwd.getpwnam(user)
        work = Path(entry.pw_dir) / "work"
        work.mkdir(mode=0o700, exist_ok=True)
        os.chown(work, entry.pw_uid, entry.pw_gid)
        made.append(work)
    victim = pwd.getpwnam(users[1])
    private = made[1] / "private.txt"
    private.write_text("the victim's private file\n")
    os.chmod(private, 0o600)
    os.chown(private, victim.pw_uid, victim.pw_gid)
    return made[0], made[1]


@pytest.fixture
def shared(system_cluster: SystemCluster) -> SystemCluster:
    """A shared cluster started the way docs/shared-machine.md says, from the install every user runs."""
    return system_cluster


@pytest.fixture
def shared_with_prolog(system_cluster_factory: Any) -> Iterator[SystemCluster]:
    """A shared cluster whose node prolog (the site's, run as root) records its environment."""
    record = Path(f"/var/tmp/drover-prolog-env-{uuid.uuid4().hex[:8]}")
    cluster: SystemCluster = system_cluster_factory(config_toml=f'[execd]\nprolog = "env > {record}"\n')
    cluster.prolog_record = record  # type: ignore[attr-defined]
    yield cluster
    record.unlink(missing_ok=True)


def _as(cluster: SystemCluster, user: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The installed `drover ARGS`, run as `user`."""
    return cluster.run_as(user, "drover", *args, cwd=cwd)


def _submit(cluster: SystemCluster, user: str, *args: str, cwd: Path) -> int:
    return cluster.submit_as(user, *args, cwd=cwd)


def _ended(cluster: SystemCluster, job: int) -> dict[str, Any]:
    return cluster.wait_ended(job)


def _attempt(shown: dict[str, Any]) -> dict[str, Any]:
    return shown["tasks"][0]["attempts"][-1]  # type: ignore[no-any-return]


def _events(cluster: SystemCluster, job: int, kind: str) -> list[dict[str, Any]]:
    return [e for e in json.loads(cluster.as_root("events", "--json", str(job)).stdout) if e["kind"] == kind]


def _ids(user: str) -> tuple[int, int]:
    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid


def _chown(user: str, *paths: Path) -> None:
    for path in paths:
        os.chown(path, *_ids(user), follow_symlinks=False)


def _shell_as(cluster: SystemCluster, user: str, command: str) -> None:
    result = cluster.run_as(user, "bash", "-c", command)
    assert result.returncode == 0, result.stderr


def _submit_raw(cluster: SystemCluster, user: str, job: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """A submission straight to the API, as `user`, with the install's Python client: for what the
    command line never sends (a staged file named with a directory)."""
    code = ("import json, sys; from drover.client import Client\n"
            "with Client(sys.argv[1]) as c:\n    print(c.submit([json.loads(sys.argv[2])])[0])\n")
    return cluster.run_as(user, cluster.install.python, "-c", code, cluster.socket, json.dumps(job))


# -- the working directory ------------------------------------------------------------------------

def test_working_directory_is_entered_as_the_owner(shared: SystemCluster, users: tuple[str, str],
                                                   homes: tuple[Path, Path]) -> None:
    attacker, victim = users
    mine, theirs = homes
    for workdir in ("/root", str(theirs)):
        job = _submit(shared, attacker, "-D", workdir, "--", "ls", cwd=mine)
        attempt = _attempt(_ended(shared, job))
        assert attempt["failure"] == f"cannot enter {workdir}: Permission denied", attempt
    # A link swapped in after submission: the job was held; the directory becomes a link to the
    # victim's; on release, the owner's open of it fails as it would for the owner.
    (mine / "dir").mkdir()
    os.chown(mine / "dir", *_ids(attacker))
    job = _submit(shared, attacker, "--hold", "-D", str(mine / "dir"), "--", "cat", "private.txt", cwd=mine)
    _shell_as(shared, attacker, f"rmdir {mine}/dir && ln -s {theirs} {mine}/dir")
    assert _as(shared, attacker, "release", str(job)).returncode == 0
    attempt = _attempt(_ended(shared, job))
    assert "Permission denied" in str(attempt["failure"])
    output = mine / f"drover-{job}.out"
    assert not output.exists() or "private" not in output.read_text()


# -- output and error files -----------------------------------------------------------------------

def test_output_files_are_created_as_the_owner(shared: SystemCluster, users: tuple[str, str],
                                               homes: tuple[Path, Path], root_secret: Path) -> None:
    attacker, victim = users
    mine, theirs = homes
    os.symlink(root_secret, mine / "to-secret")
    os.symlink(theirs / "private.txt", mine / "to-private")
    _chown(attacker, mine / "to-secret", mine / "to-private")  # planted by the attacker
    for output in (str(root_secret), str(mine / "to-secret"), str(mine / "to-private"), "/etc/drover-planted",
                   "../../../../etc/drover-planted"):
        job = _submit(shared, attacker, "-o", output, "--", "echo", "overwritten", cwd=mine)
        attempt = _attempt(_ended(shared, job))
        assert str(attempt["failure"]).startswith("cannot open output file"), (output, attempt)
    assert root_secret.read_text() == SECRET
    assert (theirs / "private.txt").read_text() == "the victim's private file\n"
    assert not Path("/etc/drover-planted").exists()
    os.mkfifo(mine / "fifo")
    job = _submit(shared, attacker, "-o", str(mine / "fifo"), "--", "echo", "x", cwd=mine)
    assert "cannot open output file" in str(_attempt(_ended(shared, job))["failure"])  # never waited on
    job = _submit(shared, attacker, "-o", "out.txt", "--", "echo", "mine", cwd=mine)
    assert _ended(shared, job)["state"] == "completed"
    assert (mine / "out.txt").read_text() == "mine\n" and (mine / "out.txt").stat().st_uid == _ids(attacker)[0]


# -- stage-in ---------------------------------------------------------------------------------------

def test_stage_in_writes_as_the_owner_never_through_a_link(shared: SystemCluster, users: tuple[str, str],
                                                           homes: tuple[Path, Path], root_secret: Path) -> None:
    attacker, victim = users
    mine, theirs = homes
    source = mine / "payload"
    source.write_text("planted\n")
    os.chown(source, *_ids(attacker))
    (mine / "run").mkdir()
    os.chown(mine / "run", *_ids(attacker))
    # A link at the staged name, to a root-only file: replaced by the file, never written through.
    os.symlink(root_secret, mine / "run" / "payload")
    _chown(attacker, mine / "run" / "payload")
    job = _submit(shared, attacker, "-D", str(mine / "run"), "--stage-in", str(source), "--", "cat", "payload",
                  cwd=mine)
    assert _ended(shared, job)["state"] == "completed"
    assert root_secret.read_text() == SECRET
    staged = mine / "run" / "payload"
    assert not staged.is_symlink() and staged.read_text() == "planted\n"
    assert staged.stat().st_uid == _ids(attacker)[0]
    # A working directory the owner may not write (root's, the victim's): refused, nothing made.
    for workdir in ("/etc", str(theirs)):
        job = _submit(shared, attacker, "-D", workdir, "-o", str(mine / "out-%j"), "--stage-in", str(source),
                      "--", "true", cwd=mine)
        attempt = _attempt(_ended(shared, job))
        assert str(attempt["failure"]).startswith(("cannot stage in payload", f"cannot enter {workdir}")), attempt
    assert not Path("/etc/payload").exists() and not (theirs / "payload").exists()
    # A directory on the way that is a link (the API takes names with directories): refused.
    os.symlink("/etc", mine / "run" / "sub")
    sent = _submit_raw(shared, attacker, {
        "script": "true\n", "workdir": str(mine / "run"), "submit_dir": str(mine),
        "stage_in": [{"name": "sub/cron.d-planted", "data": "KiAqICogKiAqIHJvb3QgdG91Y2ggL3RtcC9wd25lZAo=",
                      "mode": 420}]})
    assert sent.returncode == 0, sent.stderr
    attempt = _attempt(_ended(shared, int(sent.stdout.split()[0])))
    assert "cannot stage in sub/cron.d-planted" in str(attempt["failure"]), attempt
    assert not Path("/etc/cron.d-planted").exists()


# -- stage-out and a scratch job's output -----------------------------------------------------------

def test_stage_out_reads_as_the_owner_never_through_a_link(shared: SystemCluster, users: tuple[str, str],
                                                           homes: tuple[Path, Path], root_secret: Path) -> None:
    attacker, victim = users
    mine, theirs = homes
    (mine / "run").mkdir()
    os.chown(mine / "run", *_ids(attacker))
    os.symlink(root_secret, mine / "run" / "sym")
    _chown(attacker, mine / "run" / "sym")
    os.link(theirs / "private.txt", mine / "run" / "hard")  # root can make it; the attacker cannot read it
    os.mkfifo(mine / "run" / "fifo")
    os.chown(mine / "run" / "fifo", *_ids(attacker))
    job = _submit(shared, attacker, "-D", str(mine / "run"), "--stage-out", "sym", "--stage-out", "hard",
                  "--stage-out", "fifo", "--stage-out", "mine.txt", "--", "bash", "-c", "echo ok > mine.txt",
                  cwd=mine)
    assert _ended(shared, job)["state"] == "completed"
    (staged,) = _events(shared, job, "staged_out")
    detail = staged["detail"]
    assert detail["files"] == ["mine.txt"]  # type: ignore[index]
    assert sorted(r.split(":")[0] for r in detail["refused"]) == ["fifo", "hard", "sym"]  # type: ignore[index]
    # Root's own files through the working directory: /etc/shadow is not the owner's to read.
    job = _submit(shared, attacker, "-D", "/etc", "-o", str(mine / "out-%j"), "--stage-out", "shadow",
                  "--stage-out", "passwd", "--", "true", cwd=mine)
    _ended(shared, job)
    (staged,) = _events(shared, job, "staged_out")
    assert staged["detail"]["files"] == ["passwd"]  # type: ignore[index]
    assert [r.split(":")[0] for r in staged["detail"]["refused"]] == ["shadow"]  # type: ignore[index]
    # A scratch job (stage-in, no working directory) replaces its own output with a link.
    (mine / "input").write_text("in\n")
    job = _submit(shared, attacker, "--stage-in", "input", "--", "bash", "-c",
                  f'rm -f "drover-$DROVER_JOB_ID.out"; ln -s {root_secret} "drover-$DROVER_JOB_ID.out"',
                  cwd=mine)
    _ended(shared, job)
    logs = _as(shared, attacker, "logs", str(job))
    assert SECRET.strip() not in logs.stdout + logs.stderr
    fetched = _as(shared, attacker, "fetch", str(job), "--to", str(mine / "fetched"), cwd=mine)
    assert SECRET.strip() not in fetched.stdout + fetched.stderr
    assert not any(SECRET.strip() in p.read_text(errors="replace")
                   for p in (mine / "fetched").rglob("*") if p.is_file()) if (mine / "fetched").exists() else True


# -- the event log ----------------------------------------------------------------------------------

def test_event_log_is_written_as_the_owner(users: tuple[str, str], homes: tuple[Path, Path],
                                           shared: SystemCluster) -> None:
    """The execd writes it (the controller runs as its service user and cannot become anyone):
    the users are asked for first, so the cluster stops first and its execd ends their writers."""
    attacker, victim = users
    mine, theirs = homes
    bashrc = Path(pwd.getpwnam(victim).pw_dir) / ".bashrc"
    before = bashrc.read_bytes() if bashrc.exists() else b""
    job = _submit(shared, attacker, "--event-log", str(bashrc), "-J", "$(touch /tmp/pwned-by-name)", "--", "true",
                  cwd=mine)
    assert _ended(shared, job)["state"] == "completed"
    assert (bashrc.read_bytes() if bashrc.exists() else b"") == before
    os.mkfifo(mine / "fifo")
    os.chown(mine / "fifo", *_ids(attacker))
    job = _submit(shared, attacker, "--event-log", str(mine / "fifo"), "--", "true", cwd=mine)
    assert _ended(shared, job)["state"] == "completed"  # the controller was never blocked
    nul = _submit_raw(shared, attacker, {"script": "true\n", "workdir": str(mine), "event_log": f"{mine}/a\0b"})
    assert nul.returncode != 0 and "NUL" in nul.stderr, nul.stderr
    job = _submit(shared, attacker, "--event-log", str(mine / "events.jsonl"), "--", "true", cwd=mine)
    assert _ended(shared, job)["state"] == "completed"
    log = mine / "events.jsonl"
    wait_until(lambda: log.exists() and "job_ended" in log.read_text(), describe="the event log's last line")
    assert log.stat().st_uid == _ids(attacker)[0]
    seqs = [json.loads(line)["seq"] for line in log.read_text().splitlines()]
    assert seqs == sorted(set(seqs))
    assert shared.as_root("status").returncode == 0  # the controller kept serving everyone


# -- the spool --------------------------------------------------------------------------------------

def test_spool_records_are_private(shared: SystemCluster, users: tuple[str, str], homes: tuple[Path, Path]) -> None:
    attacker, victim = users
    mine, _ = homes
    job = _submit(shared, attacker, "--keep-spool", "--env", "TOKEN=s3cret", "--", "true", cwd=mine)
    assert _ended(shared, job)["state"] == "completed"
    kept = list(shared.spool().glob(f"kept/{job}.*"))
    assert kept, list(shared.spool().iterdir())
    assert stat.S_IMODE(kept[0].parent.stat().st_mode) == 0o700
    for record in kept[0].iterdir():
        if record.is_file() and record.name != "job_script":
            assert stat.S_IMODE(record.stat().st_mode) == 0o600, record
    reading = _as(shared, victim, "show", str(job))
    assert reading.returncode != 0


# -- site scripts -----------------------------------------------------------------------------------

def test_site_prolog_gets_nothing_of_the_jobs_environment(shared_with_prolog: SystemCluster,
                                                          users: tuple[str, str], homes: tuple[Path, Path]) -> None:
    cluster = shared_with_prolog
    attacker, _ = users
    mine, _ = homes
    # Each trap records who sprang it: the job itself (the attacker) may; root must never.
    markers = mine / "markers"
    evil = mine / "evil.sh"
    evil.write_text(f'echo "$(id -u) bash-env" >> {markers}\n')
    (mine / "bin").mkdir()
    (mine / "bin" / "env").write_text(f'#!/bin/sh\necho "$(id -u) path" >> {markers}\n')
    os.chmod(mine / "bin" / "env", 0o755)
    subprocess.run(["chown", "-R", attacker, str(mine)], check=True)
    job = _submit(cluster, attacker, "--env", f"BASH_ENV={evil}", "--env", f"ENV={evil}",
                  "--env", f"PATH={mine}/bin:/usr/bin:/bin", "--env", "LD_PRELOAD=/nonexistent/lib.so",
                  "--env", "IFS=x", "--env", f"BASH_FUNC_env%%=() {{ echo \"$(id -u) function\" >> {markers}; }}",
                  "--", "true", cwd=mine)
    assert _ended(cluster, job)["state"] == "completed"
    sprung = markers.read_text().splitlines() if markers.exists() else []
    assert not [line for line in sprung if line.startswith("0 ")], sprung
    seen = dict(line.split("=", 1) for line in cluster.prolog_record.read_text().splitlines() if "=" in line)
    for name in ("BASH_ENV", "ENV", "LD_PRELOAD", "IFS"):
        assert name not in seen, name
    assert seen["PATH"] == "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    assert seen["DROVER_JOB_OWNER"] == attacker and seen["DROVER_JOB_ID"] == str(job)
    assert json.loads(cluster.as_root("nodes", "--json").stdout)[0]["state"] == "up"


def test_the_owner_cannot_make_the_sites_prolog_fail(system_cluster_factory: Any, users: tuple[str, str],
                                                       homes: tuple[Path, Path]) -> None:
    """The site's prolog runs as root: the job's owner can neither signal it nor make its writes
    fail (its output reaches the job's file through the shepherd), so the node stays up."""
    marker = f"drover-site-prolog-{uuid.uuid4().hex[:8]}"
    cluster: SystemCluster = system_cluster_factory(
        config_toml=f'[execd]\nprolog = "echo {marker}; sleep 3; echo prolog done"\n')
    attacker, _ = users
    mine, _ = homes
    job = _submit(cluster, attacker, "-o", str(mine / "out.txt"), "--", "echo", "job ran", cwd=mine)

    def prolog_pid() -> int | None:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if marker.encode() in (entry / "cmdline").read_bytes():
                        return int(entry.name)
                except OSError:
                    continue
        return None

    pid = wait_until(prolog_pid, describe="the site prolog to run")
    assert os.stat(f"/proc/{pid}").st_uid == 0
    refused = cluster.run_as(attacker, "kill", "-KILL", str(pid))
    assert refused.returncode != 0 and "not permitted" in refused.stderr
    assert _ended(cluster, job)["state"] == "completed"
    assert (mine / "out.txt").read_text().splitlines() == [marker, "prolog done", "job ran"]
    full = _submit(cluster, attacker, "-o", "/dev/full", "--", "true", cwd=mine)
    assert "cannot open output file /dev/full" in str(_attempt(_ended(cluster, full))["failure"])
    assert json.loads(cluster.as_root("nodes", "--json").stdout)[0]["state"] == "up"
