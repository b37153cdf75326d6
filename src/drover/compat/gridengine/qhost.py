"""qhost: the nodes, as Grid Engine's execution hosts, in qhost's columns (sge_qhost.c); -q
their queue instances, -j the jobs on them, -xml the qhost document."""

from __future__ import annotations

import sys
from xml.sax.saxutils import escape

from drover.compat.gridengine.common import arch, failed, queue_name
from drover.compat.gridengine.jobaction import usage
from drover.compat.gridengine.qstat_view import Row, left, line, rows
from drover.compat.gridengine.syntax import GeUsageError, Operands, parse
from drover.compat.optiontable import Arity, Mark, Option
from drover.core.errors import DroverError

N, R, OPT = Arity.NONE, Arity.REQUIRED, Arity.OPTIONAL
OK, APPROX, MEANINGLESS = Mark.SUPPORTED, Mark.APPROXIMATED, Mark.MEANINGLESS
OPTIONS = [
    Option(("-F",), OPT, APPROX, "no resource values are shown, with a warning", "[resource_name,...]"),
    Option(("-h",), R, OK, "only these nodes", "host_list"),
    Option(("-help",), N, OK, "prints the usage"),
    Option(("-j",), N, OK, "the jobs running on each node, under it"),
    Option(("-l",), R, APPROX, "not a filter on Drover: every node is listed, with a warning", "attr=val,..."),
    Option(("-ncb",), N, OK, "without the NSOC, NCOR, NTHR columns"),
    Option(("-q",), N, OK, "each node's queue instances, with slots reserved/used/total"),
    Option(("-u",), R, OK, "with -j: only these users' jobs", "user,..."),
    Option(("-xml",), N, OK, "the qhost document"),
]
XMLNS = "http://arc.liv.ac.uk/repos/darcs/sge/source/dist/util/resources/schemas/qhost/qhost.xsd"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import JobInfo, NodeInfo


def memory(mib: int) -> str:
    """qhost's `%.1f%c` memory: 7.7G, 512.0M."""
    if mib >= 1024:
        return f"{mib / 1024:.1f}G"
    return f"{mib:.1f}M"


def host_line(columns: list[str], binding: bool) -> str:
    """`%-23s %-13.13s%4.4s %4.4s %4.4s %4.4s %5.5s %7.7s %7.7s %7.7s %7.7s` (without the three
    binding columns under -ncb)."""
    name, architecture, ncpu, nsoc, ncor, nthr, load, memtot, memuse, swapto, swapus = columns
    text = f"{name:<23} {left(architecture, 13)}{ncpu[:4]:>4} "
    if binding:
        text += f"{nsoc[:4]:>4} {ncor[:4]:>4} {nthr[:4]:>4} "
    return text + f"{load[:5]:>5} {memtot[:7]:>7} {memuse[:7]:>7} {swapto[:7]:>7} {swapus[:7]:>7}"


def columns(node: NodeInfo | None, arch_name: str) -> list[str]:
    if node is None:
        return ["global", *["-"] * 10]
    return [node.name, arch_name, str(node.cpus), "-", "-", "-", "-", memory(node.memory_mib),
            memory(node.memory_mib_used), "-", "-"]


def text(nodes: list[NodeInfo], jobs: list[JobInfo], arch_name: str, binding: bool, queues: bool,
         with_jobs: bool) -> str:
    header = ["HOSTNAME", "ARCH", "NCPU", "NSOC", "NCOR", "NTHR", "LOAD", "MEMTOT", "MEMUSE", "SWAPTO", "SWAPUS"]
    out = [host_line(header, binding), "-" * (79 + (15 if binding else 0))]
    running = [row for job in jobs for row in rows(job) if row.is_running]
    for node in [None, *nodes]:
        out.append(host_line(columns(node, arch_name), binding))
        if node is None:
            continue
        here = [r for r in running if r.node == node.name]
        if queues:
            for queue in sorted({"all.q", *(queue_name(j) for j in jobs)}):
                used = sum(r.slots for r in here if r.queue.startswith(queue + "@"))
                out.append(f"   {queue:<20} {left('BIP', 5)} {left(f'0/{used}/{node.cpus} ', 14)}")
        if with_jobs and here:
            out += ["   " + line(row) for row in here]
    return "\n".join(out) + "\n"


def xml(nodes: list[NodeInfo], jobs: list[JobInfo], arch_name: str, queues: bool, with_jobs: bool) -> str:
    names = ["arch_string", "num_proc", "m_socket", "m_core", "m_thread", "load_avg", "mem_total", "mem_used",
             "swap_total", "swap_used"]
    out = ["<?xml version='1.0'?>", f'<qhost xmlns:xsd="{XMLNS}">']
    running: list[Row] = [row for job in jobs for row in rows(job) if row.is_running]
    for node in [None, *nodes]:
        values = columns(node, arch_name)
        out.append(f" <host name='{escape(values[0], {chr(39): '&apos;'})}'>")
        out += [f"   <hostvalue name='{name}'>{value}</hostvalue>" for name, value in zip(names, values[1:],
                                                                                       strict=True)]
        if node is not None and queues:
            here = [r for r in running if r.node == node.name]
            used = sum(r.slots for r in here)
            out += [" <queue name='all.q'>", "   <queuevalue qname='all.q' name='qtype_string'>BIP</queuevalue>",
                    f"   <queuevalue qname='all.q' name='slots_used'>{used}</queuevalue>",
                    "   <queuevalue qname='all.q' name='slots_resv'>0</queuevalue>",
                    f"   <queuevalue qname='all.q' name='slots'>{node.cpus}</queuevalue>",
                    "   <queuevalue qname='all.q' name='state_string'></queuevalue>", " </queue>"]
        if node is not None and with_jobs:
            for row in (r for r in running if r.node == node.name):
                out += [f" <job name='{row.job_id}'>",
                        f"   <jobvalue jobid='{row.job_id}' name='priority'>'{row.prior:f}'</jobvalue>",
                        f"   <jobvalue jobid='{row.job_id}' name='qinstance_name'>{row.queue}</jobvalue>",
                        f"   <jobvalue jobid='{row.job_id}' name='job_name'>{row.name}</jobvalue>",
                        f"   <jobvalue jobid='{row.job_id}' name='job_owner'>{row.owner}</jobvalue>",
                        f"   <jobvalue jobid='{row.job_id}' name='job_state'>{row.state}</jobvalue>",
                        f"   <jobvalue jobid='{row.job_id}' name='pe_master'>MASTER</jobvalue>", " </job>"]
        out.append(" </host>")
    return "\n".join([*out, "</qhost>"]) + "\n"


def main(argv: list[str] | None = None) -> int:
    try:
        parsed = parse(list(sys.argv[1:] if argv is None else argv), OPTIONS, Operands.NONE)
    except GeUsageError as error:
        print(usage("qhost", OPTIONS, ""), file=sys.stderr)
        print(error, file=sys.stderr)
        return 1
    given = {g.key: g for g in parsed.given}
    if "help" in given:
        print(usage("qhost", OPTIONS, ""))
        return 0
    for key in ("F", "l"):
        if key in given:
            print(f"qhost: warning: -{key}: not shown by Drover", file=sys.stderr)
    from drover.client.client import Client

    try:
        with Client() as client:
            nodes = sorted(client.nodes(), key=lambda n: n.name)
            if "h" in given:
                wanted = set((given["h"].value or "").split(","))
                nodes = [n for n in nodes if n.name in wanted]
            jobs = []
            if "j" in given or "q" in given:
                users = (given["u"].value or "").split(",") if "u" in given else ["*"]
                listed = client.jobs() if "*" in users else [j for u in users for j in client.jobs(user=u)]
                jobs = [client.job(job.id) for job in listed if job.state in ("running", "suspended")]
    except DroverError as error:
        return failed("qhost", error)
    if "xml" in given:
        print(xml(nodes, jobs, arch(), "q" in given, "j" in given), end="")
    else:
        print(text(nodes, jobs, arch(), "ncb" not in given, "q" in given, "j" in given), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
