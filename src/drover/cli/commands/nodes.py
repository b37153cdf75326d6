"""drover nodes: the cluster's nodes; drover node drain|resume NODE: an admin takes a node out of
service and back; drover node resume NODE --queue Q clears one queue's error on the node."""

from __future__ import annotations

from drover.cli.common import client, parser, print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import NodeInfo


def run(command: str, argv: list[str]) -> int:
    if command == "node":
        return _node(argv)
    p = parser(command, "List the cluster's nodes and what they run.")
    p.add_argument("--resume", metavar="NODE", help="clear a node's ERROR so it takes work again")
    args = p.parse_args(argv)
    with client() as api:
        if args.resume:
            api.resume_node(args.resume)
        nodes = api.nodes()
    if args.json:
        print_json(nodes)
        return 0
    from drover.cli.render import table, when

    # Generic resources and features only where some node has them: most clusters have neither.
    gres = any(n.gres for n in nodes)
    features = any(n.features for n in nodes)
    table(
        ["NODE", "STATE", "CPUS", "USED", "MEMORY", "USED", "RUNNING", "LOAD", "FREE",
         *(["GRES", "GRES USED"] if gres else []), *(["FEATURES"] if features else []), "LAST SEEN", "REASON"],
        [(n.name, n.state.upper(), n.cpus, n.cpus_used, f"{n.memory_mib}M", f"{n.memory_mib_used}M",
          n.running, "" if n.load is None else f"{n.load:.2f}",
          "" if n.memory_free_mib is None else f"{n.memory_free_mib}M",
          *([n.gres or "-", n.gres_used or "-"] if gres else []), *([",".join(n.features)] if features else []),
          when(n.last_seen), _reason(n))
         for n in nodes],
    )
    return 0


def _reason(node: NodeInfo) -> str:
    """Why the node is in ERROR or drained, and which of its queues are in error (queue@node)."""
    errors = [f"queue {queue} in error: {why}" for queue, why in node.queue_errors.items()]
    return "; ".join(([node.reason] if node.reason else []) + errors)


def _node(argv: list[str]) -> int:
    p = parser("node", "Take a node out of service (drain) or back (resume); admins only.")
    p.add_argument("action", choices=("drain", "resume"),
                   help="drain: start nothing new on it, DRAINED once idle (kept until resumed); "
                        "resume: end a drain or clear an ERROR, and clear the errors of its queues")
    p.add_argument("node", metavar="NODE")
    p.add_argument("--reason", default="", help="why it is drained, shown by drover nodes")
    p.add_argument("--queue", metavar="QUEUE",
                   help="with resume: clear only this queue's error on the node (queue@node, set by a failing "
                        "prolog, epilog or PE method of one of its jobs)")
    args = p.parse_args(argv)
    if args.reason and args.action != "drain":
        p.error("--reason goes with drain")
    if args.queue and args.action != "resume":
        p.error("--queue goes with resume")
    with client() as api:
        if args.action == "drain":
            api.drain_node(args.node, args.reason)
        elif args.queue:
            api.clear_queue_error(args.node, args.queue)
        else:
            api.resume_node(args.node)
        node = next((n for n in api.nodes() if n.name == args.node), None)
    if args.json:
        print_json(node)
    elif node is not None:
        reason = _reason(node)
        print(f"node {node.name}: {node.state}" + (f" ({reason})" if reason else ""))
    return 0
