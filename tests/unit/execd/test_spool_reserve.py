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
