"""A daemon's own directories are made and checked without following a link (spool/own_directory.py):
a link, or a directory of someone else's, is refused and what it points to untouched; the
default spool skips a name someone else made first in /dev/shm."""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path

import pytest

from drover.config import Paths, default_spool
from drover.spool.own_directory import NotOurs, UnsafeDirectory, own_directory


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_makes_a_directory_and_its_parents_with_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    own_directory(str(target), 0o711)
    assert target.is_dir() and mode(target) == 0o711 and mode(tmp_path / "a") == 0o711
    target.chmod(0o700)
    own_directory(str(target), 0o711)  # there already: keeps its own mode...
    assert mode(target) == 0o700
    own_directory(str(target), 0o711, set_mode=True)  # ...unless told
    assert mode(target) == 0o711


def test_refuses_a_link_and_leaves_its_target_alone(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir(mode=0o755)
    target.chmod(0o755)
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(NotOurs, match="is a symbolic link"):
        own_directory(str(link), 0o711, set_mode=True)
    assert mode(target) == 0o755
    (tmp_path / "file").write_text("")
    with pytest.raises(NotOurs, match="is not a directory"):
        own_directory(str(tmp_path / "file"), 0o711)


@pytest.mark.skipif(os.geteuid() != 0, reason="a directory of another user's: root makes it")
def test_refuses_a_directory_of_someone_elses_or_one_others_may_write_in(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(NotOurs, match="belongs to"):
        own_directory(str(theirs), 0o711, set_mode=True)
    assert mode(theirs) == 0o755
    open_to_all = tmp_path / "open"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    with pytest.raises(NotOurs, match="may be written in by others"):
        own_directory(str(open_to_all), 0o711)


def test_says_why_a_directory_cannot_be_made(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(UnsafeDirectory, match="cannot make"):
        own_directory(str(tmp_path / "file" / "below"), 0o700)


def test_the_default_spool_skips_a_link_someone_planted_in_dev_shm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A user id of no one's, so that the name in /dev/shm is this test's alone."""
    uid = 3_000_000_000 + uuid.uuid4().int % 1_000_000
    planted = Path("/dev/shm") / f"drover-{uid}"
    target = tmp_path / "target"
    target.mkdir(mode=0o755)
    target.chmod(0o755)
    planted.symlink_to(target)
    try:
        monkeypatch.setattr(os, "getuid", lambda: uid)
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
        skipped: list[str] = []
        paths = Paths(str(tmp_path / "state"))
        assert default_spool(paths, skipped) == paths.spool
        assert len(skipped) == 1 and f"{planted} is a symbolic link" in skipped[0]
        assert mode(target) == 0o755 and list(target.iterdir()) == []
    finally:
        planted.unlink()
