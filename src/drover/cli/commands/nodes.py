"""drover nodes: the cluster's nodes."""

from __future__ import annotations

from drover.cli.common import client, parser, print_json


def run(command: str, argv: list[str]) -> int:
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

    table(
        ["NODE", "STATE", "CPUS", "USED", "MEMORY", "USED", "RUNNING", "LAST SEEN", "REASON"],
        [(n.name, n.state.upper(), n.cpus, n.cpus_used, f"{n.memory_mib}M", f"{n.memory_mib_used}M",
          n.running, when(n.last_seen), n.reason or "") for n in nodes],
    )
    return 0
