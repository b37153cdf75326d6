"""`drover install-units` writes the package's systemd units with this installation's drover in
them, and refuses the system directory to anyone but root; `drover completion SHELL` prints the
shipped script."""

from __future__ import annotations

import os
import pathlib

import pytest

from drover.cli.main import main


def test_the_units_go_where_prefix_says_with_the_given_drover(tmp_path: pathlib.Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["install-units", "--prefix", str(tmp_path / "units"), "--bindir", "/opt/drover/bin"]) == 0
    written = sorted(p.name for p in (tmp_path / "units").iterdir())
    assert written == ["drover-controller.service", "drover-execd.service"]
    execd = (tmp_path / "units" / "drover-execd.service").read_text()
    assert "ExecStart=/opt/drover/bin/drover execd --state-dir /var/lib/drover" in execd
    assert "@BINDIR@" not in (tmp_path / "units" / "drover-controller.service").read_text()
    assert os.stat(tmp_path / "units" / "drover-execd.service").st_mode & 0o777 == 0o644
    assert capsys.readouterr().out.split() == [str(tmp_path / "units" / name) for name in written]


def test_the_system_directory_is_refused_to_anyone_but_root(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert main(["install-units"]) != 0
    error = capsys.readouterr().err
    assert "/etc/systemd/system needs root" in error and "--prefix DIR" in error


def test_a_relative_or_spaced_bindir_is_refused(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["install-units", "--prefix", str(tmp_path), "--bindir", "/opt/my drover/bin"]) == 1
    assert "without spaces" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("shell, marker", [("bash", "complete -o filenames -F _shtab_drover drover"),
                                           ("zsh", "#compdef drover"), ("fish", "complete -c drover")])
def test_completion_prints_the_shells_script(shell: str, marker: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", shell]) == 0
    assert marker in capsys.readouterr().out


def test_completion_refuses_an_unknown_shell(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["completion", "tcsh"])
    assert exited.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
