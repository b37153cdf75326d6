"""Files on a user's behalf (shepherd/userfiles.py): beneath their directory, never through a
link, regular files only — with openat2 and with the component-by-component walk that stands in
for it on kernels without openat2."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from drover.shepherd import userfiles
from drover.shepherd.userfiles import UnsafePath


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest) -> Iterator[str]:
    saved = userfiles._openat2_works
    userfiles._openat2_works = None if request.param == "openat2" else False
    yield request.param
    userfiles._openat2_works = saved


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("secret\n")
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "result.txt").write_text("result\n")
    (work / "to-secret").symlink_to(tmp_path / "outside" / "secret")
    (work / "to-outside").symlink_to(tmp_path / "outside")
    (work / "hard").hardlink_to(tmp_path / "outside" / "secret")
    os.mkfifo(work / "fifo")
    fd = os.open(work, os.O_RDONLY | os.O_DIRECTORY)
    yield work, fd
    os.close(fd)


def _read(fd: int, name: str) -> bytes:
    opened = userfiles.open_regular_for_reading(fd, name)
    try:
        return os.read(opened, 100)
    finally:
        os.close(opened)


def test_reads_regular_files_beneath_and_refuses_links_fifos_and_escapes(resolver: str, workdir: tuple[Path, int]) -> None:
    work, fd = workdir
    assert _read(fd, "sub/result.txt") == b"result\n"
    for name in ("to-secret", "to-outside/secret", "../outside/secret", "/etc/passwd", "fifo", "sub/../hard"):
        with pytest.raises(UnsafePath):
            _read(fd, name)
    with pytest.raises(IsADirectoryError):
        _read(fd, "sub")
    # A hard link is a regular file of the directory: what protects its target is that the
    # shepherd reads it with the owner's rights, which the adversarial tests check as real users.
    assert _read(fd, "hard") == b"secret\n"


def test_writes_replace_a_link_instead_of_following_it(resolver: str, workdir: tuple[Path, int]) -> None:
    work, fd = workdir
    userfiles.write_beneath(fd, "to-secret", b"staged\n", 0o640)
    assert not (work / "to-secret").is_symlink() and (work / "to-secret").read_text() == "staged\n"
    assert (work.parent / "outside" / "secret").read_text() == "secret\n"
    userfiles.write_beneath(fd, "new/deeper/input.dat", b"in\n", 0o600)
    assert (work / "new" / "deeper" / "input.dat").read_bytes() == b"in\n"
    assert (work / "new" / "deeper" / "input.dat").stat().st_mode & 0o777 == 0o600
    with pytest.raises(UnsafePath):
        userfiles.write_beneath(fd, "to-outside/planted", b"x", 0o644)
    assert not (work.parent / "outside" / "planted").exists()
    with pytest.raises(UnsafePath):
        userfiles.write_beneath(fd, "../planted", b"x", 0o644)


def test_output_files_are_regular_files_or_dev_null(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError):  # no reader: refused at once, never waited on
        userfiles.open_output(str(tmp_path / "fifo"), append=False)
    with pytest.raises(UnsafePath):  # a device whose writes fail would fail the site's scripts
        userfiles.open_output("/dev/full", append=False)
    os.close(userfiles.open_output("/dev/null", append=False))
    (tmp_path / "out").write_text("old\n")
    os.close(userfiles.open_output(str(tmp_path / "out"), append=False))
    assert (tmp_path / "out").read_text() == ""


def test_matching_is_bounded_and_names_each_file_once(workdir: tuple[Path, int]) -> None:
    work, fd = workdir
    for n in range(30):
        (work / f"f{n}.dat").write_text("x")
    assert userfiles.matching(fd, ["sub/*.txt", "sub/result.txt"]) == ["sub/result.txt"]
    assert len(userfiles.matching(fd, ["*.dat"], limit=10)) == 10
