"""The room kept in each attempt's spool for the records of the job's end (spool/outcome.py) is
allocated, not written: no byte of it goes through a write, where the file system allocates;
where it refuses (an old kernel's tmpfs), it is written as zeros; where the disk is full, the
attempt does not start and nothing of the reserve is left."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from drover.spool import layout
from drover.spool.outcome import RESERVE_BYTES, make_reserve


def spool_in(tmp_path: Path) -> layout.SpoolDir:
    spool = layout.SpoolDir(str(tmp_path), "7.0.1")
    os.mkdir(spool.path)
    return spool


def counting_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    written: list[int] = []
    real_write = os.write

    def counted(fd: int, data: Any) -> int:
        written.append(len(data))
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", counted)
    return written


def refusing(number: int) -> Any:
    def fallocate(fd: int, offset: int, length: int) -> None:
        raise OSError(number, os.strerror(number))
    return fallocate


def test_the_reserve_is_allocated_without_a_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spool = spool_in(tmp_path)
    written = counting_writes(monkeypatch)
    make_reserve(spool)
    reserve = os.stat(spool.record(layout.RESERVE))
    assert written == []
    assert reserve.st_size == RESERVE_BYTES and reserve.st_blocks * 512 >= RESERVE_BYTES  # held on the disk
    assert reserve.st_mode & 0o777 == 0o600
    assert sorted(os.listdir(spool.path)) == [layout.RESERVE]


def test_where_the_file_system_refuses_to_allocate_the_reserve_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spool = spool_in(tmp_path)
    written = counting_writes(monkeypatch)
    monkeypatch.setattr(os, "posix_fallocate", refusing(errno.EOPNOTSUPP))
    make_reserve(spool)
    assert sum(written) == RESERVE_BYTES
    assert Path(spool.record(layout.RESERVE)).read_bytes() == bytes(RESERVE_BYTES)


def test_on_a_full_disk_no_reserve_is_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spool = spool_in(tmp_path)
    monkeypatch.setattr(os, "posix_fallocate", refusing(errno.ENOSPC))
    with pytest.raises(OSError) as raised:
        make_reserve(spool)
    assert raised.value.errno == errno.ENOSPC
    assert os.listdir(spool.path) == []


# -- reserves of ended attempts, kept for the next ones (spool/spare_reserves.py) --------------

def test_a_whole_reserve_of_an_ended_attempt_becomes_the_next_attempts_without_allocating(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from drover.spool.spare_reserves import DIRECTORY, SpareReserves

    ended = spool_in(tmp_path)
    make_reserve(ended)
    spares = SpareReserves(str(tmp_path))
    inode = os.stat(ended.record(layout.RESERVE)).st_ino
    assert spares.keep(ended.path, ended.name) and not os.path.exists(ended.record(layout.RESERVE))
    assert oct(os.stat(tmp_path / DIRECTORY).st_mode & 0o777) == "0o700"
    monkeypatch.setattr(os, "posix_fallocate", refusing(errno.EIO))  # none is allocated
    written = counting_writes(monkeypatch)
    following = layout.SpoolDir(str(tmp_path), "8.0.1")
    os.mkdir(following.path)
    assert spares.take(following) and not written
    reserve = os.stat(following.record(layout.RESERVE))
    assert reserve.st_ino == inode and reserve.st_size == RESERVE_BYTES and reserve.st_blocks * 512 >= RESERVE_BYTES
    assert len(spares) == 0 and not spares.take(layout.SpoolDir(str(tmp_path), "9.0.1"))


def test_a_reserve_cut_short_or_given_back_is_not_kept_and_at_most_a_few_wait(tmp_path: Path) -> None:
    from drover.spool.spare_reserves import KEPT, SpareReserves

    spares = SpareReserves(str(tmp_path))
    spool = spool_in(tmp_path)
    assert not spares.keep(spool.path, spool.name)  # given back by the shepherd: none
    Path(spool.record(layout.RESERVE)).write_bytes(b"\0" * 4096)
    assert not spares.keep(spool.path, spool.name)  # cut short
    with open(spool.record(layout.RESERVE), "r+b") as file:
        file.truncate(RESERVE_BYTES)  # its size, but a hole: no room held
    assert not spares.keep(spool.path, spool.name) and len(spares) == 0
    for n in range(KEPT + 2):
        ended = layout.SpoolDir(str(tmp_path), f"{10 + n}.0.1")
        os.mkdir(ended.path)
        make_reserve(ended)
        assert spares.keep(ended.path, ended.name) == (n < KEPT)
    assert len(spares) == KEPT


def test_a_restarted_node_takes_the_spares_it_finds_and_a_stopped_one_leaves_none(tmp_path: Path) -> None:
    from drover.spool.spare_reserves import DIRECTORY, SpareReserves

    spool = spool_in(tmp_path)
    make_reserve(spool)
    assert SpareReserves(str(tmp_path)).keep(spool.path, spool.name)
    again = SpareReserves(str(tmp_path))  # as the next execd finds them
    assert len(again) == 1
    again.close()
    assert not (tmp_path / DIRECTORY).exists()
    assert len(SpareReserves(str(tmp_path))) == 0


def kept_spare(tmp_path: Path) -> Any:
    """A SpareReserves holding one whole reserve, kept from an ended attempt's spool."""
    from drover.spool.spare_reserves import SpareReserves

    ended = spool_in(tmp_path)
    make_reserve(ended)
    spares = SpareReserves(str(tmp_path))
    assert spares.keep(ended.path, ended.name)
    return spares


def new_spool(tmp_path: Path, name: str = "8.0.1") -> layout.SpoolDir:
    spool = layout.SpoolDir(str(tmp_path), name)
    os.mkdir(spool.path)
    return spool


def test_on_a_nearly_full_disk_no_spare_is_taken_and_allocating_refuses_the_attempt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A spool with less room than a reserve left refuses the attempt as the node's fault, as
    allocating one did before spares were kept: taken by a rename, the attempt would start and
    its shepherd's first records (its pid, its containment) fail for the job."""
    spares = kept_spare(tmp_path)
    real = os.statvfs(str(tmp_path))
    nearly_full = os.statvfs_result((real.f_bsize, real.f_frsize, real.f_blocks, 2, 2, *real[5:]))
    monkeypatch.setattr(os, "statvfs", lambda path: nearly_full)
    spool = new_spool(tmp_path)
    assert not spares.take(spool) and len(spares) == 1  # kept for when there is room again
    monkeypatch.setattr(os, "posix_fallocate", refusing(errno.ENOSPC))
    with pytest.raises(OSError) as raised:
        make_reserve(spool)  # what the node does next: the attempt is not prepared
    assert raised.value.errno == errno.ENOSPC
    monkeypatch.setattr(os, "statvfs", lambda path: real)
    assert spares.take(spool)


def test_a_spare_whose_rename_fails_is_allocated_instead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spares = kept_spare(tmp_path)

    def failing(source: str, target: str) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "rename", failing)
    assert not spares.take(new_spool(tmp_path))


def test_a_reserve_with_a_second_name_is_not_kept(tmp_path: Path) -> None:
    """Kept, it would hold no room: its blocks stay with the other name when the shepherd gives
    it back."""
    from drover.spool.spare_reserves import SpareReserves

    spool = spool_in(tmp_path)
    make_reserve(spool)
    os.link(spool.record(layout.RESERVE), tmp_path / "elsewhere")
    spares = SpareReserves(str(tmp_path))
    assert not spares.keep(spool.path, spool.name) and len(spares) == 0
    assert os.path.exists(spool.record(layout.RESERVE))


def test_a_restarted_node_takes_no_spare_with_a_second_name(tmp_path: Path) -> None:
    from drover.spool.spare_reserves import DIRECTORY, SpareReserves

    kept_spare(tmp_path)
    (spare,) = os.listdir(tmp_path / DIRECTORY)
    os.link(tmp_path / DIRECTORY / spare, tmp_path / "elsewhere")
    assert len(SpareReserves(str(tmp_path))) == 0


def test_a_link_in_place_of_the_spares_directory_is_neither_followed_nor_used(tmp_path: Path) -> None:
    from drover.spool.spare_reserves import DIRECTORY, SpareReserves

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / DIRECTORY).symlink_to(elsewhere)
    spool = spool_in(tmp_path)
    make_reserve(spool)
    spares = SpareReserves(str(tmp_path))
    assert not spares.keep(spool.path, spool.name)
    assert os.listdir(elsewhere) == [] and os.path.exists(spool.record(layout.RESERVE))
    spares.close()
    assert (tmp_path / DIRECTORY).is_symlink()


def test_a_link_made_after_the_start_is_not_followed_either(tmp_path: Path) -> None:
    from drover.spool.spare_reserves import DIRECTORY, SpareReserves

    spares = SpareReserves(str(tmp_path))  # no directory yet: made at the first reserve kept
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / DIRECTORY).symlink_to(elsewhere)
    spool = spool_in(tmp_path)
    make_reserve(spool)
    assert not spares.keep(spool.path, spool.name) and os.listdir(elsewhere) == []
