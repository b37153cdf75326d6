"""`drover nodes`: a node's REASON says why it is in ERROR or drained, and which of its queues
are in error (queue@node)."""

from __future__ import annotations

from drover.cli.commands.nodes import _reason
from drover.protocol.api import NodeInfo


def node(**fields: object) -> NodeInfo:
    base: dict[str, object] = dict(name="n1", state="up", cpus=2, memory_mib=4096, cpus_used=0, memory_mib_used=0,
                                   running=0, last_seen=None)
    base.update(fields)
    return NodeInfo(**base)  # type: ignore[arg-type]


def test_the_reason_names_the_queues_in_error_on_the_node() -> None:
    assert _reason(node()) == ""
    assert _reason(node(queue_errors={"fast": "the node prolog exited with status 1 (attempt 3.0.1)"})) == (
        "queue fast in error: the node prolog exited with status 1 (attempt 3.0.1)")
    assert _reason(node(state="draining", reason="disk swap", queue_errors={"a": "x", "b": "y"})) == (
        "disk swap; queue a in error: x; queue b in error: y")
