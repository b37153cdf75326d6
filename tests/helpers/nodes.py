"""One builder of the planner's view of a node (NodeView), for the scheduler's tests."""

from __future__ import annotations

from collections.abc import Sequence

from drover.core.gres import Device
from drover.core.node_state import NodeState
from drover.core.resources import Resources
from drover.scheduler.snapshot import NodeView, Release


def a_node(name: str = "n1", cpus: int = 4, memory_mib: int = 8192, state: NodeState = NodeState.UP,
           used_cpus: tuple[int, ...] = (), used_memory_mib: int = 0, *, free: int | None = None,
           devices: tuple[Device, ...] = (), features: frozenset[str] = frozenset(), load: float = 0.0,
           running: Sequence[tuple[int, int, frozenset[Device], float, bool]] = ()) -> NodeView:
    """A node of `cpus` CPUs and `memory_mib` of memory. What is taken on it, either way:
    `used_cpus` (those CPUs' ids) and `used_memory_mib`; `free` (only that many CPUs free, the
    highest ids); `running`, tasks running there, each (its CPUs, memory, devices, end at its
    limit, exclusive), taking the lowest CPU ids."""
    taken = sum(c for c, *_ in running) + (cpus - free if free is not None else 0)
    busy = frozenset(used_cpus) | frozenset(range(taken))
    used_memory = used_memory_mib + sum(m for _, m, *_ in running)
    held = frozenset(d for _, _, devs, *_ in running for d in devs)
    releases = tuple(Release(ends, Resources(c, m), devs, whole) for c, m, devs, ends, whole in running)
    return NodeView(name, state, Resources(cpus, memory_mib), Resources(cpus - len(busy), memory_mib - used_memory),
                    frozenset(range(cpus)) - busy, releases, devices, frozenset(devices) - held,
                    frozenset(features), len(running), load)
