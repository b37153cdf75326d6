"""`drover compat install` writes LSF's commands in every flavour: their names collide with no
other front end's."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from drover.cli.commands import compat

LSF = ("bsub", "bjobs", "bkill", "bstop", "bresume", "bqueues", "bhosts", "bhist", "bpeek", "lsid")


@pytest.mark.parametrize("flavor", ["sge", "pbs"])
def test_every_flavor_installs_lsfs_commands(tmp_path: Path, flavor: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert compat.run("compat", ["install", "--flavor", flavor, str(tmp_path)]) == 0
    for name in LSF:
        text = (tmp_path / name).read_text()
        assert f"from drover.compat.lsf.{name} import main" in text
        assert callable(importlib.import_module(f"drover.compat.lsf.{name}").main)
