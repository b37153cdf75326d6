"""Which cluster answers is said by the commands, not by the client library: a command, as it is
entered (cli/pipes.py), has its client say when it found the machine's shared cluster by itself;
a program that uses the library (`from drover.client import Client`) is told nothing on stderr."""

from __future__ import annotations

import pytest

from drover import config
from drover.cli.pipes import quiet_on_broken_pipe
from drover.client.client import Client

SHARED = "/var/lib/drover/api.sock"


@pytest.fixture
def shared_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """No personal cluster runs, the shared one does, and the notice is due."""
    monkeypatch.delenv(config.SOCKET_VARIABLE, raising=False)
    monkeypatch.setattr(config, "api_socket", lambda: SHARED)
    monkeypatch.setattr(config, "falls_back_to_shared", lambda address: address == SHARED)
    monkeypatch.setattr(config, "shared_notice_due", lambda: True)
    monkeypatch.setattr(config, "cluster_found", None)


def test_the_library_says_nothing(shared_found: None, capsys: pytest.CaptureFixture[str]) -> None:
    Client().close()
    assert capsys.readouterr().err == ""


def test_a_command_says_it_talks_to_the_shared_cluster(shared_found: None, capsys: pytest.CaptureFixture[str]) -> None:
    def command() -> int:
        Client().close()
        return 0

    assert quiet_on_broken_pipe(command) == 0
    assert capsys.readouterr().err == (
        f"drover: no personal cluster is running; using the shared cluster at {SHARED} "
        f"(set {config.SOCKET_VARIABLE} to choose; `drover up` starts your own)\n")
