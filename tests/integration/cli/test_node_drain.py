"""drover node drain|resume on a real cluster: a drained node starts nothing new, is DRAINED once
idle with its reason shown, keeps the drain across an execd restart, and takes work again once
resumed; `drover nodes` shows its host's load and free memory from its heartbeats."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until


def _node(cluster: LocalCluster) -> dict[str, object]:
    (node,) = cluster.drover_json("nodes")
    return node  # type: ignore[no-any-return]


def test_a_drained_node_takes_no_work_until_resumed(cluster: LocalCluster) -> None:
    name = str(_node(cluster)["name"])
    wait_until(lambda: _node(cluster)["load"] is not None, describe="a heartbeat")
    assert isinstance(_node(cluster)["memory_free_mib"], int)
    drained = cluster.drover("node", "drain", name, "--reason", "disk swap")
    assert drained.stdout == f"node {name}: drained (disk swap)\n"
    job = cluster.submit("--", "true")
    assert cluster.drover_json("show", str(job))["state"] == "pending"
    cluster.kill("execd")
    cluster.start_execd(wait_up=False)
    wait_until(lambda: _node(cluster)["state"] == "drained", describe="the node back, still drained")
    assert _node(cluster)["reason"] == "disk swap"
    assert cluster.drover_json("show", str(job))["state"] == "pending"
    refused = cluster.drover("node", "drain", "nosuchnode", check=False)
    assert refused.returncode != 0 and "node nosuchnode does not exist" in refused.stderr
    resumed = cluster.drover("node", "resume", name)
    assert resumed.stdout == f"node {name}: up\n"
    cluster.drover("wait", str(job))
    assert cluster.drover_json("show", str(job))["state"] == "completed"
