"""sinfo on a real cluster, as snakemake (the default partition) and toil (six fields split on
single spaces) read it."""

from __future__ import annotations

from tests.helpers.cluster import LocalCluster
from tests.helpers.compat_install import install, run


def test_the_tools_command_lines(cluster: LocalCluster) -> None:
    bin_dir = install(cluster)
    node = cluster.drover_json("nodes")[0]
    out = run(cluster, bin_dir, "sinfo", "-o", "%P").stdout.split()
    assert out == ["PARTITION", "default*"]  # snakemake: the first word with `*` is the default
    lines = run(cluster, bin_dir, "sinfo", "-a", "-o", "%P %G %l %p %c %m").stdout.splitlines()
    assert lines[1].split(" ") == ["default*", "(null)", "infinite", "1", str(node["cpus"]), str(node["memory_mib"])]
    per_node = run(cluster, bin_dir, "sinfo", "-N", "-h", "-O", "NodeList:|,StateLong:|,CPUsState:").stdout
    assert per_node == f"{node['name']}|idle|0/{node['cpus']}/0/{node['cpus']}\n"
    summary = run(cluster, bin_dir, "sinfo", "-s").stdout.splitlines()
    assert summary[0].split() == ["PARTITION", "AVAIL", "TIMELIMIT", "NODES(A/I/O/T)", "NODELIST"]
    assert run(cluster, bin_dir, "sinfo", "-t", "nosuch").returncode == 1
