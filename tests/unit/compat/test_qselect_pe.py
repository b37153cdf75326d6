"""qselect -pe: the queue instances of a parallel environment of the cluster's; every queue takes
every PE, so a known name selects every instance and an unknown one none."""

from __future__ import annotations

from drover.compat.gridengine.qselect import select
from drover.protocol.api import NodeInfo


def test_qselect_pe_selects_every_instance_of_a_known_pe_and_none_of_an_unknown() -> None:
    nodes = [NodeInfo(name="n1", state="up", cpus=4, memory_mib=1024, cpus_used=0, memory_mib_used=0,
                      running=0, last_seen=0.0)]
    known = frozenset({"smp", "mpi"})
    assert select(nodes, ["all.q"], {"pe": "mpi"}, known) == ["all.q@n1"]
    assert select(nodes, ["all.q"], {"pe": "nope,smp"}, known) == ["all.q@n1"]
    assert select(nodes, ["all.q"], {"pe": "nope"}, known) == []
