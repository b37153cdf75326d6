"""Slurm's hostlist expressions, on plain data."""

from __future__ import annotations

import pytest

from drover.core.errors import BadRequest


def test_hostlists_expand_as_slurm_does() -> None:
    from drover.compat.slurm.hostlist import expand

    assert expand("node[1-3,5],gpu07") == ["node1", "node2", "node3", "node5", "gpu07"]
    assert expand("n[08-10]") == ["n08", "n09", "n10"]
    with pytest.raises(BadRequest, match="unbalanced"):
        expand("node[1-3")


@pytest.mark.parametrize(("hostlist", "hosts"), [
    # scontrol(1), "show hostnames": one host per line from a host list expression
    ("tux[1-3]", ["tux1", "tux2", "tux3"]),
    ("linux[00-02]", ["linux00", "linux01", "linux02"]),
    ("lx[10-12,15]", ["lx10", "lx11", "lx12", "lx15"]),
    # several bracket groups multiply, the first outermost (hostlist.c, multi-dimensional names)
    ("rack[1-2]-n[1-3]", ["rack1-n1", "rack1-n2", "rack1-n3", "rack2-n1", "rack2-n2", "rack2-n3"]),
    ("r[1-2]c[01-02]s1", ["r1c01s1", "r1c02s1", "r2c01s1", "r2c02s1"]),
    ("a[1-2]b,c[3,5]", ["a1b", "a2b", "c3", "c5"]),
    ("n[8-10]", ["n8", "n9", "n10"]),
])
def test_multi_range_names_expand_as_slurm_does(hostlist: str, hosts: list[str]) -> None:
    from drover.compat.slurm.hostlist import expand

    assert expand(hostlist) == hosts


@pytest.mark.parametrize(("hosts", "hostlist"), [
    (["tux1", "tux2", "tux3"], "tux[1-3]"),
    (["n9", "n10"], "n[9-10]"),  # unpadded numbers of different widths still follow each other
    (["n08", "n09", "n10"], "n[08-10]"),
    (["n9", "n010"], "n[9,010]"),  # a padded width is kept apart
    (["lx10", "lx11", "lx12", "lx15"], "lx[10-12,15]"),
    (["a1", "b1", "a2"], "a1,b1,a2"),  # order kept, as scontrol show hostlist keeps it
    (["login"], "login"),
])
def test_host_names_compress_as_slurm_does(hosts: list[str], hostlist: str) -> None:
    from drover.compat.slurm.hostlist import compress_hosts, expand

    assert compress_hosts(hosts) == hostlist
    assert expand(hostlist) == hosts
