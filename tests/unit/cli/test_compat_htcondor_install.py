"""`drover compat install`: every flavour writes HTCondor's commands beside the others (no other
batch system uses their names), each running its front end's module."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from drover.cli.commands import compat

CONDOR = ("condor_submit", "condor_q", "condor_history", "condor_rm", "condor_hold", "condor_release",
          "condor_wait", "condor_status")


@pytest.mark.parametrize("flavor", sorted(compat.FLAVORS))
def test_every_flavor_installs_htcondors_commands(flavor: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert compat.run("compat", ["install", "--flavor", flavor, str(tmp_path)]) == 0
    for name in CONDOR:
        line = next(line for line in (tmp_path / name).read_text().splitlines() if line.endswith(" import main"))
        module = line.split()[1]
        assert module == f"drover.compat.htcondor.{name}"
        assert callable(importlib.import_module(module).main)
    assert (tmp_path / "sbatch").exists()
