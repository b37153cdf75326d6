"""Where a user's commands find their personal cluster whatever a tool strips from the
environment (config.pointer_dirs): a directory another user made first, a link, or one others
may write in is never read nor written, so no one can point another user's commands at a
cluster of theirs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from drover import config


def _pointing(directory: Path, target: str) -> None:
    directory.mkdir(mode=0o700, exist_ok=True)
    (directory / config.POINTER_NAME).write_text(target + "\n")


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One pointer directory, at a path of the test's."""
    directory = tmp_path / "drover-pointer"
    monkeypatch.setattr(config, "pointer_dirs", lambda uid=None: [str(directory)])
    return directory


def test_a_pointer_directory_of_another_users_is_neither_read_nor_written(planted: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a directory another user owns needs root")
    _pointing(planted, "/tmp/someone-elses-cluster")
    os.chown(planted, 65534, 65534)
    assert config._read_recorded() is None
    config.record_state_dir("/tmp/mine")
    assert (planted / config.POINTER_NAME).read_text() == "/tmp/someone-elses-cluster\n"


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722])
def test_a_pointer_directory_others_may_write_in_is_neither_read_nor_written(planted: Path, mode: int) -> None:
    _pointing(planted, "/tmp/planted")
    os.chmod(planted, mode)
    assert config._read_recorded() is None
    config.record_state_dir("/tmp/mine")
    assert (planted / config.POINTER_NAME).read_text() == "/tmp/planted\n"


def test_a_link_in_place_of_the_pointer_directory_is_not_followed(planted: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    _pointing(elsewhere, "/tmp/planted")
    planted.symlink_to(elsewhere)
    assert config._read_recorded() is None
    config.record_state_dir("/tmp/mine")
    assert (elsewhere / config.POINTER_NAME).read_text() == "/tmp/planted\n"


def test_the_users_own_private_directory_is_written(planted: Path) -> None:
    config.record_state_dir("/tmp/mine")
    assert (planted / config.POINTER_NAME).read_text() == "/tmp/mine\n"
    assert oct(os.stat(planted).st_mode & 0o777) == oct(0o700)
