"""A host that joined a cluster finds its controllers in the cluster file, as one address or a
list, and DROVER_CONTROLLER names others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drover import config


def cluster_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, controller: object) -> None:
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"controller": controller, "ca_pem": "PEM", "munge_socket": "/m"}))
    monkeypatch.setenv(config.CLUSTER_FILE_VARIABLE, str(path))
    config._remote_clusters.clear()


def test_the_cluster_file_may_list_several_controllers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(config.CONTROLLER_VARIABLE, raising=False)
    cluster_file(tmp_path, monkeypatch, ["https://a:7443", "https://b:7443"])
    remote = config.remote_cluster()
    assert remote is not None and remote.controller == "https://a:7443,https://b:7443"


def test_drover_controller_names_other_controllers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(config.CONTROLLER_VARIABLE, "https://c:7443,https://d:7443")
    cluster_file(tmp_path, monkeypatch, "https://a:7443")
    remote = config.remote_cluster()
    assert remote is not None and remote.controller == "https://c:7443,https://d:7443"
    config._remote_clusters.clear()


def test_a_host_joined_without_munge_signs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`drover join --no-munge` writes no munged into the cluster file: its users' requests go
    unsigned, whatever munged runs on the host."""
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"controller": "https://a:7443", "ca_pem": "PEM", "munge_socket": None}))
    monkeypatch.setenv(config.CLUSTER_FILE_VARIABLE, str(path))
    monkeypatch.delenv(config.CONTROLLER_VARIABLE, raising=False)
    config._remote_clusters.clear()
    remote = config.remote_cluster()
    assert remote is not None and remote.munge_socket is None
    config._remote_clusters.clear()


def test_drover_munge_socket_names_the_munged_a_command_signs_with_or_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(config.MUNGE_SOCKET_VARIABLE, "/tmp/a-test/munge.socket")
    assert config.local_munge_socket() == "/tmp/a-test/munge.socket"
    monkeypatch.setenv(config.MUNGE_SOCKET_VARIABLE, "")
    assert config.local_munge_socket() is None  # none, though a munged may run at the default socket
    monkeypatch.delenv(config.MUNGE_SOCKET_VARIABLE)
    import os

    assert config.local_munge_socket() == (config.MUNGE_SOCKET if os.path.exists(config.MUNGE_SOCKET) else None)
