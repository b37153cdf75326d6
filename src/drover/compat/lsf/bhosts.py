"""bhosts: the cluster's hosts as IBM Spectrum LSF's bhosts lists them: status (ok, closed when
full or drained, unavail when down), its slots, and the jobs' slots on it; -l the long form, -w
wide."""

from __future__ import annotations

import sys

from drover.compat.lsf.common import EXIT_FAILURE, run
from drover.compat.optiontable import Arity, Mark, Option

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.compat.lsf.syntax import Given
    from drover.protocol.api import NodeInfo

OPTIONS = [
    Option(("-l",), Arity.NONE, Mark.SUPPORTED, "the long form: each host's load and why it is closed"),
    Option(("-w",), Arity.NONE, Mark.SUPPORTED, "wide: names and statuses are not cut (closed_Full, closed_Adm)"),
    Option(("-h",), Arity.NONE, Mark.SUPPORTED, "print the usage"),
    Option(("-V",), Arity.NONE, Mark.SUPPORTED, "print Drover's version, as LSF's release"),
]
USAGE = "Usage: bhosts [-h] [-V] [-w | -l] [host_name ...]"


def status(node: NodeInfo, wide: bool) -> str:
    """ok; closed_Adm (drained by an operator), closed_Full (every slot used); unavail (down)."""
    if node.state == "down":
        return "unavail"
    if node.state in ("draining", "drained"):
        return "closed_Adm" if wide else "closed"
    if node.cpus and node.cpus_used >= node.cpus:
        return "closed_Full" if wide else "closed"
    return "ok"


def main(argv: list[str] | None = None) -> int:
    return run("bhosts", argv, OPTIONS, USAGE, _show)


def _show(client: Client, given: list[Given], operands: list[str]) -> int:
    keys = {g.key for g in given}
    nodes = client.nodes()
    code = 0
    names = {node.name for node in nodes}
    for name in operands:
        if name not in names:
            print(f"{name}: Bad host name, host group name or cluster name", file=sys.stderr)
            code = EXIT_FAILURE
    shown = [node for node in nodes if not operands or node.name in operands]
    wide = bool(keys & {"w", "l"})
    if "l" in keys:
        for node in shown:
            print(f"HOST  {node.name}")
            print("STATUS           CPUF  JL/U    MAX  NJOBS    RUN  SSUSP  USUSP    RSV DISPATCH_WINDOW")
            print(f"{status(node, True):<16} {1.0:>5.2f} {'-':>5} {node.cpus:>6} {node.cpus_used:>6} "
                  f"{node.cpus_used:>6} {0:>6} {0:>6} {0:>6}      -")
            print("\n CURRENT LOAD USED FOR SCHEDULING:")
            print("                r1m     mem")
            load = f"{node.load:.1f}" if node.load is not None else "-"
            free = f"{node.memory_free_mib}M" if node.memory_free_mib is not None else "-"
            print(f" Total        {load:>5} {free:>7}")
            if node.reason:
                print(f"\n ADMIN ACTION COMMENT: \"{node.reason}\"")
            print()
        return code
    if shown:
        print(f"{'HOST_NAME':<18} {'STATUS':<12} {'JL/U':>4} {'MAX':>6} {'NJOBS':>6} {'RUN':>6} {'SSUSP':>6} "
              f"{'USUSP':>6} {'RSV':>6}")
        for node in shown:
            name = node.name if wide or len(node.name) <= 18 else node.name[:17] + "*"
            print(f"{name:<18} {status(node, wide):<12} {'-':>4} {node.cpus:>6} {node.cpus_used:>6} "
                  f"{node.cpus_used:>6} {0:>6} {0:>6} {0:>6}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
