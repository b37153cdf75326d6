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

import pytest
from tests.helpers.shared_cluster import SharedCluster
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


def _as(cluster: SharedCluster, user: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return cluster.drover_as(user, *args, cwd=cwd)


def _submit(cluster: SharedCluster, user: str, *args: str, cwd: Path) -> int:
    result = _as(cluster, user, "submit", "--parsable", *args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return int(result.stdout.split()[0])


def _ended(cluster: SharedCluster, job: int) -> dict[str, object]:
    wait_until(lambda: cluster.show(job)["state"] not in ("pending", "running", "completing", "dispatched"),
               timeout=60, describe=f"job {job} to end")
    return cluster.show(job)


def _attempt(shown: dict[str, object]) -> dict[str, object]:
    return shown["tasks"][0]["attempts"][-1]  # type: ignore[index, no-any-return]


def _events(cluster: SharedCluster, job: int, kind: str) -> list[dict[str, object]]:
    return [e for e in cluster.events(job) if e["kind"] == kind]


def _as_user_shell(user: str, command: str) -> None:
    subprocess.run(["setpriv", "--reuid", user, "--regid", user, "--init-groups", "bash", "-c", command], check=True)


# -- the working directory ------------------------------------------------------------------------

def test_working_directory_is_entered_as_the_owner(shared: SharedCluster, users: tuple[str, str],
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
    _as_user_shell(attacker, f"rmdir {mine}/dir && ln -s {theirs} {mine}/dir")
    assert _as(shared, attacker, "release", str(job)).returncode == 0
    attempt = _attempt(_ended(shared, job))
    assert "Permission denied" in str(attempt["failure"])
    assert "private" not in (mine / f"drover-{job}.out").read_text() if (mine / f"drover-{job}.out").exists() else True


def _ids(user: str) -> tuple[int, int]:
    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid


# -- output and error files -----------------------------------------------------------------------

def test_output_files_are_created_as_the_owner(shared: SharedCluster, users: tuple[str, str],
                                               homes: tuple[Path, Path], root_secret: Path) -> None:
    attacker, victim = users
    mine, theirs = homes
    os.symlink(root_secret, mine / "to-secret")
    os.symlink(theirs / "private.txt", mine / "to-private")
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

def test_stage_in_writes_as_the_owner_never_through_a_link(shared: SharedCluster, users: tuple[str, str],
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
    job = _submit(shared, attacker, "-D", str(mine / "run"), "--stage-in", str(source), "--", "cat", "payload",
                  cwd=mine)
    assert _ended(shared, job)["state"] == "completed"
    assert root_secret.read_text() == SECRET
    staged = mine / "run" / "payload"
    assert not staged.is_symlink() and staged.read_text() == "planted\n"
    assert staged.stat().st_uid == _ids(attacker)[0]
    # A working directory the owner may not write (root's, the victim's): refused, nothing made.
    for workdir in ("/etc", str(theirs)):
        job = _submit(shared, attacker, "-D", workdir, "--stage-in", str(source), "--", "true", cwd=mine)
        attempt = _attempt(_ended(shared, job))
        assert str(attempt["failure"]).startswith(("cannot stage in payload", f"cannot enter {workdir}")), attempt
    assert not Path("/etc/payload").exists() and not (theirs / "payload").exists()
    # A directory on the way that is a link: refused.
    os.symlink("/etc", mine / "run" / "sub")
    (mine / "nested").mkdir()
    (mine / "nested" / "sub").mkdir()
    (mine / "nested" / "sub" / "cron").write_text("* * * * * root touch /tmp/pwned\n")
    subprocess.run(["chown", "-R", attacker, str(mine / "nested")], check=True)
    job = _submit(shared, attacker, "-D", str(mine / "run"), "--stage-in", "sub/cron", "--", "true",
                  cwd=mine / "nested")
    attempt = _attempt(_ended(shared, job))
    assert "cannot stage in sub/cron" in str(attempt["failure"]), attempt
    assert not Path("/etc/cron").exists()


# -- stage-out and a scratch job's output -----------------------------------------------------------

def test_stage_out_reads_as_the_owner_never_through_a_link(shared: SharedCluster, users: tuple[str, str],
                                                           homes: tuple[Path, Path], root_secret: Path) -> None:
    attacker, victim = users
    mine, theirs = homes
    (mine / "run").mkdir()
    os.chown(mine / "run", *_ids(attacker))
    os.symlink(root_secret, mine / "run" / "sym")
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
    job = _submit(shared, attacker, "-D", "/etc", "--stage-out", "shadow", "--stage-out", "passwd", "--", "true",
                  cwd=mine)
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

def test_event_log_is_written_as_the_owner(shared: SharedCluster, users: tuple[str, str],
                                           homes: tuple[Path, Path]) -> None:
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
    nul = _as(shared, attacker, "submit", "--event-log", f"{mine}/a\0b", "--", "true", cwd=mine)
    assert nul.returncode != 0
    job = _submit(shared, attacker, "--event-log", str(mine / "events.jsonl"), "--", "true", cwd=mine)
    assert _ended(shared, job)["state"] == "completed"
    log = mine / "events.jsonl"
    wait_until(lambda: log.exists() and "job_ended" in log.read_text(), describe="the event log's last line")
    assert log.stat().st_uid == _ids(attacker)[0]
    seqs = [json.loads(line)["seq"] for line in log.read_text().splitlines()]
    assert seqs == sorted(set(seqs))
    assert shared.ping()  # the controller kept serving everyone


# -- the spool --------------------------------------------------------------------------------------

def test_spool_records_are_private(shared: SharedCluster, users: tuple[str, str], homes: tuple[Path, Path]) -> None:
    attacker, victim = users
    mine, _ = homes
    job = _submit(shared, attacker, "--keep-spool", "--env", "TOKEN=s3cret", "--", "true", cwd=mine)
    assert _ended(shared, job)["state"] == "completed"
    kept = list(shared.spool.glob(f"kept/{job}.*"))
    assert kept, list(shared.spool.iterdir())
    assert stat.S_IMODE(kept[0].parent.stat().st_mode) == 0o700
    for record in kept[0].iterdir():
        if record.is_file() and record.name != "job_script":
            assert stat.S_IMODE(record.stat().st_mode) == 0o600, record
    reading = _as(shared, victim, "show", str(job))
    assert reading.returncode != 0


# -- site scripts -----------------------------------------------------------------------------------

def test_site_prolog_gets_nothing_of_the_jobs_environment(shared_with_prolog: SharedCluster,
                                                          users: tuple[str, str], homes: tuple[Path, Path]) -> None:
    cluster = shared_with_prolog
    attacker, _ = users
    mine, _ = homes
    evil = mine / "evil.sh"
    evil.write_text("touch /tmp/drover-pwned-by-bash-env\n")
    (mine / "bin").mkdir()
    (mine / "bin" / "env").write_text("#!/bin/sh\ntouch /tmp/drover-pwned-by-path\n")
    os.chmod(mine / "bin" / "env", 0o755)
    subprocess.run(["chown", "-R", attacker, str(mine)], check=True)
    job = _submit(cluster, attacker, "--env", f"BASH_ENV={evil}", "--env", f"ENV={evil}",
                  "--env", f"PATH={mine}/bin:/usr/bin:/bin", "--env", "LD_PRELOAD=/nonexistent/lib.so",
                  "--env", "IFS=x", "--env", "BASH_FUNC_echo%%=() { touch /tmp/drover-pwned-by-function; }",
                  "--", "true", cwd=mine)
    assert _ended(cluster, job)["state"] == "completed"
    for marker in ("bash-env", "path", "function"):
        assert not Path(f"/tmp/drover-pwned-by-{marker}").exists(), marker
    seen = dict(line.split("=", 1) for line in cluster.prolog_record.read_text().splitlines() if "=" in line)
    for name in ("BASH_ENV", "ENV", "LD_PRELOAD", "IFS"):
        assert name not in seen, name
    assert seen["PATH"] == "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    assert seen["DROVER_JOB_OWNER"] == attacker and seen["DROVER_JOB_ID"] == str(job)
    assert cluster.nodes()[0]["state"] == "up"
