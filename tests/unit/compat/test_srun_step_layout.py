"""Where srun lays a step's tasks in a job whose allocation spans several hosts
(compat/slurm/step_hosts.py, slurm_layout.py), on plain data."""

from __future__ import annotations

import pytest

from drover.compat.slurm.request import OptionError, Refused
from drover.compat.slurm.step_hosts import (
    allocation,
    distribution,
    expand_counts,
    lay_out,
    node_range,
)
from drover.slurm_layout import compress_counts, tasks_per_node

NODES = [("node1", 4), ("node2", 4)]


def ranks(allocated: list[tuple[str, int]], ntasks: int, nodes: tuple[int, int | None] | None = None,
          per_node: int | None = None, cpus_per_task: int = 1) -> list[tuple[str, list[int]]]:
    layout = lay_out("7", allocated, ntasks, nodes, per_node, cpus_per_task)
    return [(node.node, node.ranks) for node in layout.nodes]


def test_tasks_spread_over_the_nodes_then_are_numbered_node_after_node() -> None:
    # Slurm's block distribution: srun -n2 in a 2-node allocation runs a task on each node,
    # -n3 two on the first, -n8 four on each (tasks numbered in blocks)
    assert ranks(NODES, 2) == [("node1", [0]), ("node2", [1])]
    assert ranks(NODES, 3) == [("node1", [0, 1]), ("node2", [2])]
    assert ranks(NODES, 8) == [("node1", [0, 1, 2, 3]), ("node2", [4, 5, 6, 7])]
    # uneven nodes: a node that is full takes no more (slurm_step_layout.c, _task_layout_block)
    assert tasks_per_node([2, 1, 3], 5) == [2, 1, 2]
    assert ranks([("a", 1), ("b", 3)], 4) == [("a", [0]), ("b", [1, 2, 3])]


def test_a_step_of_fewer_tasks_than_nodes_uses_fewer_nodes_and_says_so() -> None:
    layout = lay_out("7", NODES, 1, None, None, 1)
    assert [(node.node, node.ranks) for node in layout.nodes] == [("node1", [0])]
    assert layout.warnings == ["can't run 1 processes on 2 nodes, setting nnodes to 1"]


def test_nodes_limits_the_nodes_and_more_than_the_job_has_is_refused() -> None:
    assert ranks(NODES, 2, nodes=(1, None)) == [("node1", [0, 1])]
    assert ranks(NODES, 2, nodes=(1, 2)) == [("node1", [0]), ("node2", [1])]
    with pytest.raises(Refused, match="^Only allocated 2 nodes asked for 3$"):
        ranks(NODES, 3, nodes=(3, None))
    assert node_range("2") == (2, None) and node_range("1-2") == (1, 2)
    with pytest.raises(OptionError, match="not a valid node count"):
        node_range("two")


def test_what_the_nodes_cannot_hold_is_refused_in_sruns_words() -> None:
    message = "^Unable to create step for job 7: More processors requested than permitted$"
    with pytest.raises(Refused, match=message):
        ranks(NODES, 9)
    with pytest.raises(Refused, match=message):
        ranks(NODES, 5, nodes=(1, None))
    with pytest.raises(Refused, match=message):
        ranks(NODES, 3, cpus_per_task=3)  # one task of 3 CPUs fits on each node
    with pytest.raises(Refused, match=message):
        ranks(NODES, 5, per_node=2)


def test_cpus_per_task_and_ntasks_per_node_shape_the_layout() -> None:
    assert ranks(NODES, 4, cpus_per_task=2) == [("node1", [0, 1]), ("node2", [2, 3])]
    assert ranks(NODES, 4, per_node=2) == [("node1", [0, 1]), ("node2", [2, 3])]
    assert ranks([("a", 4), ("b", 4), ("c", 4)], 3, per_node=1) == [("a", [0]), ("b", [1]), ("c", [2])]


def test_the_layout_in_slurms_words() -> None:
    layout = lay_out("7", [("n1", 4), ("n2", 4), ("n3", 4), ("m", 2)], 10, None, None, 1)
    assert (layout.ntasks, layout.nodelist, layout.tasks_per_node) == (10, "n[1-3],m", "3(x2),2(x2)")
    assert compress_counts([2, 2, 2, 1]) == "2(x3),1" and compress_counts([4]) == "4"


def test_the_allocation_is_read_from_the_jobs_variables() -> None:
    environ = {"SLURM_JOB_NODELIST": "node[1-2],gpu1", "SLURM_JOB_CPUS_PER_NODE": "2(x2),4"}
    assert allocation(environ) == [("node1", 2), ("node2", 2), ("gpu1", 4)]
    assert allocation({"SLURM_JOB_NODELIST": "node1", "SLURM_JOB_CPUS_PER_NODE": "4",
                       "SLURM_CPUS_ON_NODE": "4"}) == [("node1", 4)]
    assert expand_counts("2(x3),1") == [2, 2, 2, 1] and expand_counts("two") == []
    # counts that do not match the nodes: the job's own node alone, as before
    assert allocation({"SLURM_JOB_NODELIST": "a,b", "SLURM_JOB_CPUS_PER_NODE": "1"}) == [("a", 1)]


def test_srun_m_cyclic_deals_the_tasks_to_the_nodes_in_turn() -> None:
    # srun(1) -m cyclic: "consecutive tasks are distributed over consecutive nodes"; each node
    # holds as many as the block layout gives it, a full node is passed over
    assert [(n.node, n.ranks) for n in lay_out("7", NODES, 3, None, None, 1, "cyclic").nodes] == [
        ("node1", [0, 2]), ("node2", [1])]
    assert [(n.node, n.ranks) for n in lay_out("7", [("a", 1), ("b", 3)], 4, None, None, 1, "cyclic").nodes] == [
        ("a", [0]), ("b", [1, 2, 3])]
    assert distribution("cyclic:block") == ("cyclic", None)
    assert distribution(None) == distribution("block:cyclic") == ("block", None)
    how, warning = distribution("plane=2")
    assert how == "block" and warning is not None and "laid out in blocks" in warning
