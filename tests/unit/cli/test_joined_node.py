"""On a host that joined a cluster as a node, `drover submit` does not start a personal cluster
behind the user's back: when the file `drover join` writes for its users cannot be read, it says
where the cluster is."""

from __future__ import annotations

from pathlib import Path

import pytest

from drover.cli import cluster
from drover.core.errors import Unavailable


def test_submit_on_a_joined_node_says_where_the_cluster_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system = tmp_path / "system"
    system.mkdir()
    (system / "drover.toml").write_text('[execd]\ncontroller = "https://10.213.0.1:7443"\nnode_name = "node1"\n')
    monkeypatch.setattr(cluster, "SYSTEM_STATE_DIR", str(system))
    monkeypatch.setenv("DROVER_STATE_DIR", str(tmp_path / "personal"))
    monkeypatch.delenv("DROVER_SOCKET", raising=False)
    with pytest.raises(Unavailable, match=r"this host is a node of the cluster at https://10\.213\.0\.1:7443"):
        cluster.ensure_running()
    assert not (tmp_path / "personal").exists()  # nothing was started
