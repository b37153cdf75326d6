"""Where a step's tasks run in a job whose allocation spans several hosts: srun's distribution
over the job's nodes, in the order of its nodelist (the master first), on plain data. The step
uses all the job's nodes unless -N says fewer (and never more nodes than it has tasks); each
node takes tasks as its CPUs over --cpus-per-task allow, at most --ntasks-per-node; the tasks
are counted out as Slurm counts them (slurm_layout.tasks_per_node) and numbered node after node
(`block`, the default) or one node after the other in turn (`cyclic`), as -m says. What the
nodes cannot hold is refused in srun's words."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from drover.compat.slurm.hostlist import expand
from drover.compat.slurm.request import OptionError, Refused
from drover.slurm_layout import compress_counts, compress_hosts, tasks_per_node


@dataclass(frozen=True)
class NodeTasks:
    node: str
    ranks: list[int]  # the tasks' global ranks (SLURM_PROCID), in order: SLURM_LOCALID is the position


@dataclass(frozen=True)
class Layout:
    nodes: list[NodeTasks]  # the step's nodes, in order: SLURM_NODEID is the position
    warnings: list[str]  # srun's warnings about the request, to print as `srun: Warning: ...`

    @property
    def ntasks(self) -> int:
        return sum(len(node.ranks) for node in self.nodes)

    @property
    def nodelist(self) -> str:
        return compress_hosts([node.node for node in self.nodes])

    @property
    def tasks_per_node(self) -> str:
        return compress_counts([len(node.ranks) for node in self.nodes])


def allocation(environ: Mapping[str, str]) -> list[tuple[str, int]]:
    """The job's nodes and the CPUs it holds on each, from its SLURM_JOB_NODELIST and
    SLURM_JOB_CPUS_PER_NODE (as srun reads its allocation from them); one node of
    SLURM_CPUS_ON_NODE when they say nothing else."""
    names = expand(environ.get("SLURM_JOB_NODELIST", ""))
    cpus = expand_counts(environ.get("SLURM_JOB_CPUS_PER_NODE", ""))
    if len(names) < 2 or len(cpus) != len(names):
        text = environ.get("SLURM_CPUS_ON_NODE", "1")
        return [(names[0] if names else "", int(text) if text.isdigit() else 1)]
    return list(zip(names, cpus, strict=True))


def expand_counts(text: str) -> list[int]:
    """"2(x3),1" → [2, 2, 2, 1]; [] for what is not such a list."""
    counts: list[int] = []
    for part in text.split(","):
        match = re.fullmatch(r"([0-9]+)(?:\(x([0-9]+)\))?", part.strip())
        if match is None:
            return []
        counts += [int(match.group(1))] * int(match.group(2) or 1)
    return counts


def node_range(text: str) -> tuple[int, int | None]:
    """-N MIN[-MAX]."""
    match = re.fullmatch(r"\s*([0-9]+)\s*(?:-\s*([0-9]*)\s*)?", text)
    if not match or (int(match.group(1)) < 1 and not match.group(2)):
        raise OptionError(f"\"{text}\" is not a valid node count")
    return int(match.group(1)), int(match.group(2)) if match.group(2) else None


def distribution(spec: str | None) -> tuple[str, str | None]:
    """-m's first level (how tasks go over nodes; the levels after it, over sockets and cores,
    are the kernel's business here): block or cyclic, and a warning for the others (plane,
    arbitrary), which are laid out in blocks."""
    first = (spec or "").split(":")[0].split(",")[0].split("=")[0].lower()
    if first in ("", "*", "block"):
        return "block", None
    if first == "cyclic":
        return "cyclic", None
    return "block", f"--distribution={spec}: the tasks are laid out in blocks (block and cyclic are taken here)"


def lay_out(job_id: str, nodes: list[tuple[str, int]], ntasks: int, node_count: tuple[int, int | None] | None,
            ntasks_per_node: int | None, cpus_per_task: int, how: str = "block") -> Layout:
    """The step's tasks on the job's `nodes` (name, CPUs held there), master first; `how`:
    block or cyclic (`distribution`)."""
    warnings: list[str] = []
    wanted = len(nodes)
    if node_count is not None:
        low, high = node_count
        if low > len(nodes):
            raise Refused(f"Only allocated {len(nodes)} nodes asked for {low}")
        wanted = min(high if high is not None and high >= low else low, len(nodes)) or 1
    if ntasks < wanted:
        warnings.append(f"can't run {ntasks} processes on {wanted} nodes, setting nnodes to {ntasks}")
        wanted = ntasks
    used = nodes[:wanted]
    room = [cpus // cpus_per_task for _, cpus in used]
    if ntasks_per_node is not None:
        room = [min(held, ntasks_per_node) for held in room]
    if ntasks > sum(room) or 0 in room:
        raise Refused(f"Unable to create step for job {job_id}: More processors requested than permitted")
    counts = tasks_per_node(room, ntasks)
    ranks = _cyclic(counts) if how == "cyclic" else _block(counts)
    return Layout([NodeTasks(name, mine) for (name, _), mine in zip(used, ranks, strict=True)], warnings)


def _block(counts: list[int]) -> list[list[int]]:
    """Ranks numbered node after node: [2, 1] → [[0, 1], [2]]."""
    out, first = [], 0
    for count in counts:
        out.append(list(range(first, first + count)))
        first += count
    return out


def _cyclic(counts: list[int]) -> list[list[int]]:
    """Ranks dealt to the nodes in turn, a node that has its count passed over: [2, 1] →
    [[0, 2], [1]] (srun -m cyclic: "consecutive tasks are distributed over consecutive nodes")."""
    out: list[list[int]] = [[] for _ in counts]
    rank = 0
    while rank < sum(counts):
        for node, count in enumerate(counts):
            if len(out[node]) < count:
                out[node].append(rank)
                rank += 1
    return out
