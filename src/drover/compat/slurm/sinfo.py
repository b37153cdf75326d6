"""sinfo: the cluster's queues (Slurm's partitions) and nodes, in sinfo's default columns."""

from __future__ import annotations

import sys

from drover.compat.slurm.common import fail
from drover.core.errors import DroverError

NODE_STATES = {"up": "idle", "down": "down", "draining": "drng", "drained": "drain", "error": "drain"}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        from drover.client.client import Client

        with Client() as client:
            nodes = client.transport.call("GET", "/v1/nodes")["nodes"]
    except DroverError as error:
        return fail("sinfo", str(error))
    if "-h" not in args and "--noheader" not in args:
        print("PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST")
    groups: dict[str, list[str]] = {}
    for node in nodes:
        state = NODE_STATES.get(node["state"], "unk")
        if state == "idle" and node["running"]:
            state = "alloc" if node["cpus_used"] >= node["cpus"] else "mix"
        groups.setdefault(state, []).append(node["name"])
    for state, names in sorted(groups.items()):
        print(f"{'default*':<9} {'up':>5} {'infinite':>10} {len(names):>6} {state:>6} {','.join(names)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
