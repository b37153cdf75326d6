"""A job's max RSS is its own, not the shepherd's (shepherd/rss_mark.py).

The job's first process starts from the Python shepherd's address space (vfork or fork), whose
high-water mark the kernel folds into the job's ru_maxrss at exec: /bin/true would report the
shepherd's 10 MiB and more. A job that holds 100 MiB reports about 100 MiB; /bin/true, whose
figure cannot be told from the shepherd's, reports 0 (not known) and the mark it stayed under.
Under each containment backend this host can run, as the shepherd's own user (posix_spawn) and as
another user (a root shepherd's fork that switches to the owner)."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.shared_dirs import directory_in_tmp
from tests.helpers.spools import exit_status, make_spool, usage

MIB = 1024
HOLDS_100_MIB = "exec dd if=/dev/zero of=/dev/null bs=100M count=1 status=none\n"  # a 100 MiB buffer, filled
NOTHING = "exec /bin/true\n"


@pytest.fixture
def spool_root() -> Iterator[Path]:
    """A spool root another user's job can traverse (pytest's own tmp_path sits in a 0700 dir)."""
    with directory_in_tmp("drv-rss-", 0o711) as root:
        yield root


def run(spool: Path, backend: str) -> dict[str, object]:
    subprocess.run([sys.executable, "-m", "drover.shepherd", str(spool)], timeout=60, check=True,
                   env={**os.environ, "DROVER_CONTAINMENT": backend})
    assert exit_status(spool)["exit_code"] == 0, (spool / "trace").read_text()
    used = usage(spool)
    assert used["containment"] == backend
    return used


def spool_of(root: Path, name: str, script: str, owner: str | None) -> Path:
    if owner is None:
        return make_spool(root, script, name=name)
    entry = pwd.getpwnam(owner)
    workdir = root / f"{name}-work"
    workdir.mkdir()
    os.chown(workdir, entry.pw_uid, entry.pw_gid)
    identity = {"user": owner, "uid": entry.pw_uid, "gid": entry.pw_gid,
                "groups": sorted(set(os.getgrouplist(owner, entry.pw_gid))), "home": entry.pw_dir,
                "shell": entry.pw_shell}
    spool = make_spool(root, script, name=name, workdir=str(workdir), stdout=str(workdir / "out.txt"),
                       identity=identity, owner=owner)
    os.chmod(spool, 0o711)
    os.chown(spool / "job_script", entry.pw_uid, entry.pw_gid)
    return spool


def check_figures(root: Path, backend: str, owner: str | None) -> None:
    held = run(spool_of(root, "7.0.1", HOLDS_100_MIB, owner), backend)
    assert 100 * MIB <= held["max_rss_kib"] <= 100 * MIB + 16 * MIB  # type: ignore[operator]

    nothing = run(spool_of(root, "8.0.1", NOTHING, owner), backend)
    assert nothing["max_rss_kib"] == 0  # not known: /bin/true stayed under the shepherd's mark
    # The shepherd's mark: a Python interpreter's resident set, which /bin/true's wait4 figure
    # would have been, and which the record keeps beside the figure.
    inherited = nothing["max_rss_inherited_kib"]
    assert isinstance(inherited, int) and inherited > 5 * MIB


def test_a_jobs_max_rss_is_its_own_as_the_shepherds_user(spool_root: Path, backend: str) -> None:
    check_figures(spool_root, backend, None)


def test_a_jobs_max_rss_is_its_own_as_its_owner(spool_root: Path, backend: str, users: tuple[str, str]) -> None:
    check_figures(spool_root, backend, users[0])
