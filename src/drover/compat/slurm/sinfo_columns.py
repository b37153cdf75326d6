"""Every field sinfo can print (`-o` letters, `-O` names), with the real command's header, as
src/sinfo/opts.c (fmt_data) and src/sinfo/print.c define them; and the lines sinfo prints: nodes
grouped by partition and state, or one line per node (`-N`). Partitions are Drover's queues: a
queue's state is the partition's AVAIL, its max_time_s the TIMELIMIT, its nodes the partition's. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from drover.compat.slurm.columns import Column
from drover.compat.slurm.common import VERSION
from drover.compat.slurm.hostlist import compress_hosts
from drover.compat.slurm.scontrol_show import node_state
from drover.compat.slurm.timefmt import secs
from drover.protocol.api import NodeInfo, QueueInfo

# A queue's state as a partition's (sinfo's AVAIL, scontrol's State).
PARTITION_STATES = {"open": "up", "stopped": "down", "draining": "drain", "inactive": "inact"}
LONG_STATES = {"idle": "idle", "mix": "mixed", "alloc": "allocated", "down": "down", "drain": "drained",
               "drng": "draining", "unk": "unknown"}


@dataclass(frozen=True)
class Group:
    """One sinfo line: nodes of one partition that share a state (or one node, with -N)."""

    partition: str
    default: bool
    nodes: tuple[NodeInfo, ...]
    state: str  # sinfo's compact word: idle, mix, alloc, drain, drng, down
    queue: QueueInfo | None = None  # the queue behind the partition, when known

    @property
    def available(self) -> str:
        return "up" if self.queue is None else PARTITION_STATES.get(self.queue.state, "up")

    @property
    def time_limit(self) -> str:
        limit = None if self.queue is None else self.queue.max_time_s
        return "infinite" if limit is None else secs(limit)

    @property
    def default_time(self) -> str:
        limit = None if self.queue is None else self.queue.default_time_s
        return "n/a" if limit is None else secs(limit)

    @property
    def compact(self) -> str:
        return self.state + ("*" if self.state == "down" else "")  # `*`: the node does not respond

    @property
    def long(self) -> str:
        return LONG_STATES.get(self.state, self.state) + ("*" if self.state == "down" else "")

    def counts(self) -> tuple[int, int, int, int]:
        """Nodes allocated, idle, other, total (the A/I/O/T fields)."""
        allocated = sum(1 for n in self.nodes if node_state(n) in ("mix", "alloc"))
        idle = sum(1 for n in self.nodes if node_state(n) == "idle")
        return allocated, idle, len(self.nodes) - allocated - idle, len(self.nodes)

    def cpu_counts(self) -> tuple[int, int, int, int]:
        total = sum(n.cpus for n in self.nodes)
        allocated = sum(n.cpus_used for n in self.nodes)
        other = sum(n.cpus - n.cpus_used for n in self.nodes if node_state(n) in ("down", "drain", "drng"))
        return allocated, total - allocated - other, other, total


def _spread(values: list[int]) -> str:
    """sinfo's way with a value that differs between the nodes of a line: `MIN+`."""
    if not values:
        return "0"
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}+"


def _aiot(numbers: tuple[int, ...]) -> str:
    return "/".join(str(n) for n in numbers)


COLUMNS: list[Column[Group]] = [Column(name, letter, header, value) for name, letter, header, value in (
    ("AllocMem", "", "ALLOCMEM", lambda g: str(sum(n.memory_mib_used for n in g.nodes))),
    ("AllocNodes", "S", "ALLOCNODES", lambda g: "all"),
    ("Available", "a", "AVAIL", lambda g: g.available),
    ("Cluster", "V", "CLUSTER", lambda g: "drover"),
    ("Comment", "", "COMMENT", lambda g: "(null)"),
    ("Cores", "Y", "CORES", lambda g: "1"),
    ("CPUs", "c", "CPUS", lambda g: _spread([n.cpus for n in g.nodes])),
    ("CPUsLoad", "O", "CPU_LOAD", lambda g: "N/A"),
    ("CPUsState", "C", "CPUS(A/I/O/T)", lambda g: _aiot(g.cpu_counts())),
    ("DefaultTime", "L", "DEFAULTTIME", lambda g: g.default_time),
    ("Disk", "d", "TMP_DISK", lambda g: "0"),
    ("Extra", "", "EXTRA", lambda g: "(null)"),
    ("Features", "f", "AVAIL_FEATURES", lambda g: "(null)"),
    ("features_act", "b", "ACTIVE_FEATURES", lambda g: "(null)"),
    ("FreeMem", "e", "FREE_MEM", lambda g: "N/A"),
    ("Gres", "G", "GRES", lambda g: "(null)"),
    ("GresUsed", "", "GRES_USED", lambda g: "(null)"),
    ("Groups", "g", "GROUPS", lambda g: "all"),
    ("MaxCPUsPerNode", "B", "MAX_CPUS_PER_NODE", lambda g: "UNLIMITED"),
    ("Memory", "m", "MEMORY", lambda g: _spread([n.memory_mib for n in g.nodes])),
    ("NodeAddr", "o", "NODE_ADDR", lambda g: compress_hosts([n.name for n in g.nodes])),
    ("NodeAI", "A", "NODES(A/I)", lambda g: _aiot(g.counts()[:2])),
    ("NodeAIOT", "F", "NODES(A/I/O/T)", lambda g: _aiot(g.counts())),
    ("NodeHost", "n", "HOSTNAMES", lambda g: compress_hosts([n.name for n in g.nodes])),
    ("NodeList", "N", "NODELIST", lambda g: compress_hosts([n.name for n in g.nodes])),
    ("Nodes", "D", "NODES", lambda g: str(len(g.nodes))),
    ("OverSubscribe", "h", "OVERSUBSCRIBE", lambda g: "NO"),
    ("Partition", "P", "PARTITION", lambda g: g.partition + ("*" if g.default else "")),
    ("PartitionName", "R", "PARTITION", lambda g: g.partition),
    ("Port", "", "PORT", lambda g: "0"),
    ("PreemptMode", "M", "PREEMPT_MODE", lambda g: "OFF"),
    ("PriorityJobFactor", "I", "PRIO_JOB_FACTOR", lambda g: str(g.queue.priority) if g.queue else "1"),
    ("PriorityTier", "p", "PRIO_TIER", lambda g: "1"),
    ("Reason", "E", "REASON", lambda g: next((n.reason for n in g.nodes if n.reason), "none")),
    ("Reservation", "i", "RESERVATION", lambda g: ""),
    ("Root", "r", "ROOT", lambda g: "no"),
    ("Share", "h", "OVERSUBSCRIBE", lambda g: "NO"),
    ("Size", "s", "JOB_SIZE", lambda g: "1-infinite"),
    ("Sockets", "X", "SOCKETS", lambda g: _spread([n.cpus for n in g.nodes])),
    ("SocketCoreThread", "z", "S:C:T", lambda g: f"{_spread([n.cpus for n in g.nodes])}:1:1"),
    ("StateCompact", "t", "STATE", lambda g: g.compact),
    ("StateComplete", "", "STATECOMPLETE", lambda g: g.long),
    ("StateLong", "T", "STATE", lambda g: g.long),
    ("Threads", "Z", "THREADS", lambda g: "1"),
    ("Time", "l", "TIMELIMIT", lambda g: g.time_limit),
    ("TimeStamp", "H", "TIMESTAMP", lambda g: "Unknown"),
    ("User", "u", "USER", lambda g: "Unknown"),
    ("UserLong", "U", "USER", lambda g: "Unknown"),
    ("Version", "v", "VERSION", lambda g: VERSION.split()[-1]),
    ("Weight", "w", "WEIGHT", lambda g: "1"),
)]


def groups(partitions: list[str] | list[QueueInfo], nodes: list[NodeInfo], per_node: bool,
           exact: bool = False) -> list[Group]:
    """The lines: for each partition (a queue, or a bare name standing for one on every node), its
    nodes grouped by state in sinfo's order of first appearance (CPUs and memory that differ
    print as `MIN+`; with `exact`, -e, nodes of other sizes get lines of their own); with
    `per_node`, one line per node and partition. A partition without nodes gets a line of its own
    (no nodes, state n/a), as in Slurm."""
    out: list[Group] = []
    for partition in partitions:
        queue = partition if isinstance(partition, QueueInfo) else None
        name = queue.name if queue is not None else str(partition)
        default = name == "default"
        members_of = nodes if queue is None else [node for node in nodes if node.name in set(queue.node_names)]
        if not members_of and queue is not None:
            out.append(Group(name, default, (), "n/a", queue))
            continue
        if per_node:
            out += [Group(name, default, (node,), node_state(node), queue) for node in members_of]
            continue
        by_key: dict[tuple[str, int, int], list[NodeInfo]] = {}
        for node in members_of:
            size = (node.cpus, node.memory_mib) if exact else (0, 0)
            by_key.setdefault((node_state(node), *size), []).append(node)
        out += [Group(name, default, tuple(members), key[0], queue) for key, members in by_key.items()]
    return out
