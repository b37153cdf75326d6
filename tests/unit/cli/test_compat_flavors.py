"""`drover compat install`: Grid Engine's qsub, qstat and qdel by default, PBS's with --flavor
pbs; Slurm's commands either way; each installed command runs its front end's module."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from drover.cli.commands import compat


def _modules(directory: Path) -> dict[str, str]:
    """Each installed command → the module its script imports `main` from."""
    out = {}
    for path in directory.iterdir():
        line = next(line for line in path.read_text().splitlines() if line.endswith(" import main"))
        out[path.name] = line.split()[1]
    return out


def test_the_default_flavor_is_grid_engines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert compat.run("compat", ["install", str(tmp_path)]) == 0
    modules = _modules(tmp_path)
    assert modules["qsub"] == "drover.compat.gridengine.qsub" and modules["sbatch"] == "drover.compat.slurm.sbatch"
    assert "pbsnodes" not in modules


def test_the_pbs_flavor_installs_pbs_commands_under_the_shared_names(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert compat.run("compat", ["install", "--flavor", "pbs", str(tmp_path)]) == 0
    modules = _modules(tmp_path)
    for name in ("qsub", "qstat", "qdel", "qhold", "qrls", "qalter", "qsig", "qrerun", "pbsnodes"):
        assert modules[name] == f"drover.compat.pbs.{name}"
        assert callable(importlib.import_module(modules[name]).main)
    assert modules["sbatch"] == "drover.compat.slurm.sbatch" and "qacct" not in modules


def test_an_unknown_flavor_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        compat.run("compat", ["install", "--flavor", "lsf", str(tmp_path)])
    assert "invalid choice: 'lsf'" in capsys.readouterr().err and not list(tmp_path.iterdir())
