"""-N MIN[-MAX] of sbatch, salloc and srun outside a job, and the shape of a job on several
nodes: Slurm's tasks per node over the nodes, as Drover runs it, a job of the built-in
parallel environment `slurm` whose own slots on each node (its pe_per_node) fix exactly that
many CPUs on each of its nodes. Pure, on the options given."""

from __future__ import annotations

import re
from dataclasses import dataclass

from drover.compat.slurm.request import OptionError, Refused, Request, warn

PARALLEL_ENVIRONMENT = "slurm"  # controller/handlers/parallel_envs.py SLURM


@dataclass(frozen=True)
class AcrossNodes:
    """What a job on several nodes asks of each: `per_node` CPUs (its tasks there × cpus-per-task)
    on each of `nodes` nodes, and its tasks in all (SLURM_NTASKS)."""

    nodes: int
    tasks_per_node: int
    per_node: int
    ntasks: int

    @property
    def slots(self) -> int:
        return self.nodes * self.per_node


def requested_nodes(request: Request) -> int:
    """The nodes the job gets: -N's MIN (1 when -N is not given)."""
    text = request.value("nodes")
    if text is None:
        return 1
    match = re.fullmatch(r"\s*([0-9]+)\s*(?:-\s*([0-9]*)\s*)?", text)
    if not match:
        raise OptionError(f"\"{text}\" is not a valid node count")
    low, high = int(match.group(1)), match.group(2)
    if low < 1 and not high:
        raise OptionError(f"\"{text}\" is not a valid node count")
    if high and int(high) < low:
        raise OptionError(f"\"{text}\" is not a valid node count")
    return max(low, 1)


def nodes_for_tasks(request: Request, ntasks: int | None) -> int:
    """The nodes the job gets: -N's MIN, but no more nodes than it has tasks (-n), as Slurm
    lowers them."""
    nodes = requested_nodes(request)
    return min(nodes, ntasks) if ntasks is not None else nodes


def warn_of_nodes(request: Request, ntasks: int | None) -> None:
    """Slurm's warnings, printed once, when the job is made: -N MIN-MAX, where Slurm may give up
    to MAX nodes and Drover gives MIN; and -N above -n, which Slurm lowers to -n."""
    text = request.value("nodes")
    nodes = requested_nodes(request)
    match = re.fullmatch(r"\s*([0-9]+)\s*-\s*([0-9]*)\s*", text or "")
    if match and match.group(2) != str(nodes):
        warn(request.command, f"--nodes={text}: the job gets {nodes} node{'s' if nodes > 1 else ''}, "
                              "the least of the range")
    if ntasks is not None and ntasks < nodes:
        warn(request.command, f"can't run {ntasks} processes on {nodes} nodes, setting nnodes to {ntasks}")


def across_nodes(request: Request, nodes: int, ntasks: int | None, tasks_per_node: int | None,
                 cpus_per_task: int) -> AcrossNodes:
    """The shape of a job on `nodes` (more than one) nodes: -n spread as evenly as Slurm spreads
    them (the first nodes one more), at most --ntasks-per-node on each (sbatch(1): with -n, it
    "will be treated as a maximum count of tasks per node"); else --ntasks-per-node on each, else
    one. Each node's CPUs are its most tasks × cpus-per-task, at least --mincpus. What Drover
    cannot run on several nodes is refused here, before anything is submitted."""
    spelled = f"--nodes={request.value('nodes')}"
    for key in ("exclusive", "gres", "gpus", "gpus-per-node", "gpus-per-task"):
        if request.has(key) and (key != "exclusive" or (request.value(key) or "exclusive") == "exclusive"):
            raise Refused(f"{request.spelled(key)} with {spelled}: Drover keeps a job that asks for devices or "
                          "whole nodes on one node")
    if ntasks is not None and tasks_per_node is not None and ntasks > nodes * tasks_per_node:
        raise Refused(f"--ntasks={ntasks} with {spelled} and --ntasks-per-node={tasks_per_node}: {ntasks} tasks "
                      f"do not fit {tasks_per_node} on each of {nodes} nodes (Requested node configuration is "
                      "not available)")
    if ntasks is not None:
        tasks_per_node = -(-ntasks // nodes)
    elif tasks_per_node is None:
        tasks_per_node = 1
    per_node = tasks_per_node * cpus_per_task
    mincpus = request.integer("mincpus", minimum=1)
    if mincpus is not None:
        per_node = max(per_node, mincpus)
    return AcrossNodes(nodes, tasks_per_node, per_node, ntasks if ntasks is not None else nodes * tasks_per_node)
