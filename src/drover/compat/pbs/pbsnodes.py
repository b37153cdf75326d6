"""pbsnodes: the cluster's nodes as PBS Pro lists them (`-a`, one or more names, `-F json`)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.pbs.common import run, server_name, version
from drover.compat.pbs.syntax import Given, PbsUsageError, last

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import NodeInfo

OPTIONS = [
    Option(("-a",), Arity.NONE, Mark.SUPPORTED, "every node"),
    Option(("-F",), Arity.REQUIRED, Mark.SUPPORTED, "`json` as PBS Pro writes it; `dsv` ✗", "json"),
    Option(("-l",), Arity.NONE, Mark.SUPPORTED, "the nodes that are down or offline, with why"),
    Option(("-S",), Arity.NONE, Mark.SUPPORTED, "one line each: name, state, CPUs and memory"),
    Option(("-o",), Arity.NONE, Mark.REFUSED, "marking nodes offline is `drover nodes drain`"),
    Option(("-r",), Arity.NONE, Mark.REFUSED, "clearing offline is `drover nodes resume`"),
    Option(("--version",), Arity.NONE, Mark.SUPPORTED, "prints `pbs_version =` Drover's version"),
]
USAGE = "usage:\n\tpbsnodes [-a | -l] [-S] [-F json] [node ...]\n\tpbsnodes --version"


def state(node: NodeInfo) -> str:
    """PBS's node state: free, job-busy (every CPU used), down, offline (draining)."""
    if node.state == "down":
        return "down"
    if node.state in ("draining", "drained"):
        return "offline"
    return "job-busy" if node.cpus and node.cpus_used >= node.cpus else "free"


def attributes(node: NodeInfo) -> dict[str, Any]:
    out: dict[str, Any] = {"Mom": node.name, "Port": 15002, "ntype": "PBS", "state": state(node),
                           "pcpus": node.cpus,
                           "resources_available": {"host": node.name, "mem": f"{node.memory_mib}mb",
                                                   "ncpus": node.cpus, "vnode": node.name},
                           "resources_assigned": {"mem": f"{node.memory_mib_used}mb", "ncpus": node.cpus_used},
                           "sharing": "default_shared"}
    gpus = sum(int(item.rsplit(":", 1)[-1]) for item in node.gres.split(",")
               if item.startswith("gpu") and item.rsplit(":", 1)[-1].isdigit())
    if gpus:
        out["resources_available"]["ngpus"] = gpus
    if node.reason:
        out["comment"] = node.reason
    if node.last_seen is not None:
        out["last_state_change_time"] = int(node.last_seen)
    return out


def main(argv: list[str] | None = None) -> int:
    return run("pbsnodes", argv, OPTIONS, USAGE, _act, _check)


def _check(given: list[Given], operands: list[str]) -> None:
    for g in given:
        if g.option.mark is Mark.REFUSED:
            raise PbsUsageError(f"pbsnodes: {g.option.names[0]}: {g.option.note}", 1, usage=False)
    form = last(given, "F")
    if form is not None and form.value != "json":
        raise PbsUsageError(f"pbsnodes: -F {form.value}: Drover writes json only")
    if not operands and not {g.key for g in given} & {"a", "l", "S", "version"}:
        raise PbsUsageError(USAGE, usage=False)


def _act(client: Client, given: list[Given], operands: list[str]) -> int:
    nodes = client.nodes()
    keys = {g.key for g in given}
    form = last(given, "F")
    status = 0
    if operands:
        named = {node.name: node for node in nodes}
        for name in operands:
            if name not in named:
                print(f"pbsnodes: Unknown node {name}", file=sys.stderr)
                status = 15062 % 256  # PBSE_UNKNODE
        nodes = [named[name] for name in operands if name in named]
    if "l" in keys:
        for node in nodes:
            if state(node) in ("down", "offline"):
                print(f"{node.name:<20} {state(node):<15} {node.reason or ''}".rstrip())
        return status
    if form is not None:
        print(json.dumps({"timestamp": int(time.time()), "pbs_version": version(), "pbs_server": server_name(),
                          "nodes": {node.name: attributes(node) for node in nodes}}, indent=4))
        return status
    if "S" in keys:
        print("vnode           state           njobs   run   susp      f/t        f/t        f/t        f/t   jobs")
        print("--------------- --------------- ------ ----- ------ ---------- ---------- ---------- --------- -------")
        for node in nodes:
            memory = f"{(node.memory_mib - node.memory_mib_used) // 1024}gb/{node.memory_mib // 1024}gb"
            print(f"{node.name:<15} {state(node):<15} {node.running:>6} {node.running:>5} {0:>6} {memory:>10} "
                  f"{'0/0':>10} {f'{node.cpus - node.cpus_used}/{node.cpus}':>10} {'0/0':>9} --")
        return status
    for node in nodes:
        print(node.name)
        for key, value in attributes(node).items():
            if isinstance(value, dict):
                for inner, item in value.items():
                    print(f"     {key}.{inner} = {item}")
            else:
                print(f"     {key} = {value}")
        print()
    return status


if __name__ == "__main__":
    raise SystemExit(main())
