"""`drover compat install`: Grid Engine's qsub, qstat and qdel by default, PBS's with --flavor
pbs; Slurm's commands either way; each installed command runs its front end's module, and its
man page goes where man finds it; a file already there stops the install before it writes."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from drover.cli.commands import compat


def _modules(directory: Path) -> dict[str, str]:
    """Each installed command → the module its script imports `main` from."""
    out = {}
    for path in directory.iterdir():
        if path.is_dir():
            continue  # man/
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


def test_each_command_comes_with_its_flavors_man_page_where_man_finds_it(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    sge, pbs = tmp_path / "sge", tmp_path / "pbs"
    assert compat.run("compat", ["install", str(sge)]) == 0
    assert compat.run("compat", ["install", "--flavor", "pbs", str(pbs)]) == 0
    for directory in (sge, pbs):
        commands = {path.name for path in directory.iterdir() if path.is_file()}
        assert {path.name for path in (directory / "man" / "man1").iterdir()} == {f"{name}.1" for name in commands}
    assert "not to Grid Engine" in (sge / "man" / "man1" / "qsub.1").read_text()
    assert "not to PBS Pro or Torque" in (pbs / "man" / "man1" / "qsub.1").read_text()
    assert "\\-W\\fR" in (pbs / "man" / "man1" / "qsub.1").read_text()  # PBS's -W depend=...
    if shutil.which("man"):  # man-db looks in DIR/man for each DIR on PATH
        found = subprocess.run(["man", "-w", "qsub"], capture_output=True, text=True,
                               env={**os.environ, "PATH": f"{pbs}:{os.environ['PATH']}", "MANPATH": ""})
        assert found.stdout.strip() == str(pbs / "man" / "man1" / "qsub.1"), found


def test_a_file_already_there_stops_the_install_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "squeue").write_text("mine\n")
    with pytest.raises(Exception, match="squeue exists; --force replaces them"):
        compat.run("compat", ["install", str(tmp_path)])
    assert [path.name for path in tmp_path.iterdir()] == ["squeue"] and (tmp_path / "squeue").read_text() == "mine\n"
    assert compat.run("compat", ["install", "--force", str(tmp_path)]) == 0
    assert "drover.compat.slurm.squeue" in (tmp_path / "squeue").read_text()
