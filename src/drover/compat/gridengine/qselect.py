"""qselect: the queue instances (`queue@node`) that match, one a line, as qmod and other
scripts take them."""

from __future__ import annotations

import fnmatch
import sys

from drover.compat.gridengine.common import failed
from drover.compat.gridengine.jobaction import usage
from drover.compat.gridengine.syntax import GeUsageError, Operands, parse
from drover.compat.optiontable import Arity, Mark, Option
from drover.core.errors import DroverError

R = Arity.REQUIRED
OPTIONS = [
    Option(("-help",), Arity.NONE, Mark.SUPPORTED, "prints the usage"),
    Option(("-l",), R, Mark.SUPPORTED, "`h_rt`, `h_vmem`, `mem_free`, `slots`, `hostname`: the instances that "
           "can meet the request; other resources ✗", "resource[=value],..."),
    Option(("-pe",), R, Mark.SUPPORTED, "a parallel environment of the cluster's (`smp` and drover.toml's): every "
           "instance, since every queue takes every PE; other names match none", "pe_name,..."),
    Option(("-q",), R, Mark.SUPPORTED, "`queue`, `queue@node`, with wildcards", "wc_queue,..."),
    Option(("-qs",), R, Mark.SUPPORTED, "`a`: every instance; `u`: nodes that are down; `d`: drained; `E`: in "
           "error; other states match none", "{a|c|d|o|s|u|A|C|D|E|S}"),
    Option(("-U",), R, Mark.MEANINGLESS, "every queue takes every user", "user,..."),
]
STATES = {"u": ("down",), "d": ("drained", "draining"), "E": ("error",)}

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import NodeInfo


def select(nodes: list[NodeInfo], queues: list[str], given: dict[str, str],
           environments: frozenset[str] = frozenset({"smp"})) -> list[str]:
    """The matching instances; `environments`: the cluster's parallel environments. Pure."""
    from drover.compat.gridengine.values import memory_mib

    out = []
    for queue in queues:
        for node in nodes:
            name = f"{queue}@{node.name}"
            if "q" in given and not any(fnmatch.fnmatchcase(name if "@" in p else queue, p)
                                        for p in given["q"].split(",")):
                continue
            if "pe" in given and not environments & set(given["pe"].split(",")):
                continue
            if "qs" in given and "a" not in given["qs"] and not any(
                    node.state in STATES.get(letter, ()) for letter in given["qs"]):
                continue
            fits = True
            for item in given.get("l", "").split(",") if "l" in given else []:
                key, _, value = item.partition("=")
                if key in ("h_vmem", "mem_free", "virtual_free", "mf", "vf"):
                    fits = fits and (not node.memory_mib or memory_mib(value) <= node.memory_mib)
                elif key in ("slots", "s"):
                    fits = fits and int(value or 1) <= node.cpus
                elif key in ("hostname", "h"):
                    fits = fits and fnmatch.fnmatchcase(node.name, value)
                elif key not in ("h_rt", "s_rt"):
                    fits = False
            if fits:
                out.append(name)
    return out


def main(argv: list[str] | None = None) -> int:
    try:
        parsed = parse(list(sys.argv[1:] if argv is None else argv), OPTIONS, Operands.NONE)
    except GeUsageError as error:
        print(usage("qselect", OPTIONS, ""), file=sys.stderr)
        print(error, file=sys.stderr)
        return 1
    given = {g.key: g.value or "" for g in parsed.given}
    if "help" in given:
        print(usage("qselect", OPTIONS, ""))
        return 0
    from drover.client.client import Client

    try:
        with Client() as client:
            nodes = sorted(client.nodes(), key=lambda n: n.name)
            queues = sorted({"all.q", *("all.q" if j.queue == "default" else j.queue for j in client.jobs())})
            environments = frozenset(pe.name for pe in client.parallel_environments()) if "pe" in given else (
                frozenset())
    except DroverError as error:
        return failed("qselect", error)
    for name in select(nodes, queues, given, environments):
        print(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
