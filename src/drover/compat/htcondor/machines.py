"""The cluster's nodes as HTCondor's machine ads (one partitionable slot each): what
`requirements` is evaluated against, and what condor_status shows."""

from __future__ import annotations

import os
from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import NodeInfo

_ARCH = {"x86_64": "X86_64", "aarch64": "aarch64", "ppc64le": "ppc64le", "i686": "INTEL"}


def state(node: NodeInfo) -> tuple[str, str]:
    """(State, Activity): Unclaimed Idle, Claimed Busy (every CPU used), Owner Idle (down or
    draining: not taking jobs), as condor_status names them."""
    if node.state == "down":
        return "Owner", "Idle"
    if node.state in ("draining", "drained"):
        return "Drained", "Retiring" if node.running else "Idle"
    if node.cpus_used and node.cpus_used >= node.cpus:
        return "Claimed", "Busy"
    return "Unclaimed", "Idle"


def gpus(node: NodeInfo) -> int:
    return sum(int(item.rsplit(":", 1)[-1]) for item in node.gres.split(",")
               if item.startswith("gpu") and item.rsplit(":", 1)[-1].isdigit())


def machine_ad(node: NodeInfo) -> dict[str, Any]:
    slot_state, activity = state(node)
    ad: dict[str, Any] = {
        "Name": f"slot1@{node.name}", "Machine": node.name, "SlotType": "Partitionable", "OpSys": "LINUX",
        "Arch": _ARCH.get(os.uname().machine, os.uname().machine.upper()), "State": slot_state,
        "Activity": activity, "Cpus": max(node.cpus - node.cpus_used, 0), "TotalCpus": node.cpus,
        "Memory": max(node.memory_mib - node.memory_mib_used, 0), "TotalMemory": node.memory_mib,
        "Gpus": gpus(node), "LoadAvg": node.load or 0.0, "HasFileTransfer": True, "Start": node.state == "up",
        "MyType": "Machine",
    }
    for feature in node.features:
        name, equals, value = feature.partition("=")
        if name.isidentifier():
            ad.setdefault(name, value if equals else True)
    return ad
