"""Each PBS command's usage and its behaviour agree on --version: a command whose usage offers
it prints `pbs_version =` Drover's version and exits 0 without asking the cluster; one whose
usage does not refuses it as a bad option."""

from __future__ import annotations

import importlib

import pytest

from drover import __version__

COMMANDS = ("pbsnodes", "qalter", "qdel", "qhold", "qrerun", "qrls", "qsig", "qstat", "qsub")


@pytest.mark.parametrize("command", COMMANDS)
def test_version_is_answered_where_the_usage_offers_it_and_refused_elsewhere(
        command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DROVER_SOCKET", "/nonexistent/drover-api.sock")  # no cluster is asked
    module = importlib.import_module(f"drover.compat.pbs.{command}")
    offered = "--version" in module.USAGE
    status = module.main(["--version"])
    out, err = capsys.readouterr()
    if offered:
        assert (status, out, err) == (0, f"pbs_version = {__version__}\n", "")
    else:
        assert status == 2 and out == ""
        assert "version" in err


def test_qdel_answers_version_and_still_asks_for_a_job_without_it(capsys: pytest.CaptureFixture[str]) -> None:
    from drover.compat.pbs import qdel

    assert qdel.main(["--version"]) == 0
    assert capsys.readouterr().out == f"pbs_version = {__version__}\n"
    assert qdel.main([]) == 2
    assert "usage:\n\tqdel" in capsys.readouterr().err
