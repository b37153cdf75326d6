"""Drover's queues as Grid Engine's cluster queues: their names (`default` is `all.q`), the
`qstat -g c` summary and the `qconf -sq` configuration. Pure: queues and nodes come in as data."""

from __future__ import annotations

from drover.compat.gridengine.values import hms

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import NodeInfo, QueueInfo

SUMMARY_HEADER = (f"{'CLUSTER QUEUE':<30.30} {'CQLOAD':>7.7} {'USED':>6.6} {'RES':>6.6} {'AVAIL':>6.6} "
                  f"{'TOTAL':>6.6} {'aoACDS':>6.6} {'cdsuE':>6.6} ")
_UNAVAILABLE_NODES = ("down", "error", "draining", "drained")  # u, E, and d: disabled on that host


def ge_name(queue: str) -> str:
    """Grid Engine's name for a Drover queue: `default` is `all.q`."""
    return "all.q" if queue == "default" else queue


def drover_name(queue: str) -> str:
    return "default" if queue == "all.q" else queue


def queue_nodes(queue: QueueInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
    names = set(queue.node_names)
    return [node for node in nodes if node.name in names]


def summary_line(queue: QueueInfo, nodes: list[NodeInfo]) -> str:
    """One `qstat -g c` line, as qstat_cqueue_summary prints it: slots used, reserved (none on
    Drover), available, in all; slots of instances disabled by a calendar (a closed window:
    aoACDS), and of instances disabled or in error (a stopped queue, a node down or drained:
    cdsuE). CQLOAD is the mean of the nodes' load per CPU, or -NA-."""
    mine = queue_nodes(queue, nodes)
    total = sum(node.cpus for node in mine)
    manual = calendar = available = 0
    for node in mine:
        if queue.state in ("stopped", "inactive") or node.state in _UNAVAILABLE_NODES:
            manual += node.cpus
        elif not queue.window_open:
            calendar += node.cpus
        else:
            available += max(node.cpus - node.cpus_used, 0)
    loads = [node.load / node.cpus for node in mine if node.load is not None and node.cpus]
    load = f"{sum(loads) / len(loads):7.2f}" if loads else f"{'-NA-':>7}"
    return (f"{ge_name(queue.name):<30.30} {load} {queue.cpus_used:6d} {0:6d} {available:6d} {total:6d} "
            f"{calendar:6d} {manual:6d} ")


def cluster_summary(queues: list[QueueInfo], nodes: list[NodeInfo]) -> str:
    """`qstat -g c`: the header, a rule, and a line per cluster queue in name order."""
    lines = [SUMMARY_HEADER, "-" * 80]
    lines += [summary_line(q, nodes) for q in sorted(queues, key=lambda q: ge_name(q.name))]
    return "\n".join(lines) + "\n"


def limit_time(seconds: int | None) -> str:
    """A queue's h_rt: `H:MM:SS`, or INFINITY."""
    if seconds is None:
        return "INFINITY"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def limit_memory(mib: int | None) -> str:
    if mib is None:
        return "INFINITY"
    return f"{mib // 1024}G" if mib % 1024 == 0 else f"{mib}M"


def queue_conf(queue: QueueInfo, nodes: list[NodeInfo]) -> list[tuple[str, str]]:
    """`qconf -sq`'s fields (queue_conf(5)) for a Drover queue: its nodes as the host list (every
    node: @allhosts), slots per node, its nice as `priority` (Grid Engine's queue priority is the
    jobs' nice value), its window as the calendar, its time and memory limits as h_rt and h_vmem."""
    mine = queue_nodes(queue, nodes)
    hostlist = "@allhosts" if queue.nodes is None else " ".join(n.name for n in mine) or "NONE"
    slots = ",".join(["1", *(f"[{n.name}={n.cpus}]" for n in mine)])
    state = "disabled" if queue.state in ("stopped", "inactive") else "default"
    rows = [("qname", ge_name(queue.name)), ("hostlist", hostlist), ("seq_no", "0"), ("load_thresholds", "NONE"),
            ("suspend_thresholds", "NONE"), ("nsuspend", "1"), ("suspend_interval", "00:05:00"),
            ("priority", str(queue.nice)), ("min_cpu_interval", "00:05:00"), ("processors", "UNDEFINED"),
            ("qtype", "BATCH INTERACTIVE"), ("ckpt_list", "NONE"), ("pe_list", "smp"), ("rerun", "TRUE"),
            ("slots", slots), ("tmpdir", "/tmp"), ("shell", "/bin/bash"), ("prolog", "NONE"),
            ("epilog", "NONE"), ("shell_start_mode", "posix_compliant"), ("starter_method", "NONE"),
            ("suspend_method", queue.suspend_method or "NONE"), ("resume_method", queue.resume_method or "NONE"),
            ("terminate_method", queue.terminate_method or "NONE"), ("notify", hms(queue.notify_s)),
            ("owner_list", queue.owner or "NONE"), ("user_lists", "NONE"),
            ("xuser_lists", "NONE"), ("subordinate_list", "NONE"), ("complex_values", "NONE"),
            ("projects", "NONE"), ("xprojects", "NONE"), ("calendar", queue.window or "NONE"),
            ("initial_state", state)]
    limits = {"h_rt": limit_time(queue.max_time_s), "h_vmem": limit_memory(queue.max_memory_mib)}
    rows += [(limit, limits.get(limit, "INFINITY")) for limit in (
        "s_rt", "h_rt", "s_cpu", "h_cpu", "s_fsize", "h_fsize", "s_data", "h_data", "s_stack", "h_stack", "s_core",
        "h_core", "s_rss", "h_rss", "s_vmem", "h_vmem")]
    return rows
