"""What no node of the cluster could ever give is refused at submission, naming what none has
(controller/handlers/submission_checks.py: check_some_node_offers); accepted with no node known
yet, and when held."""

from __future__ import annotations

import pytest

from drover.controller.handlers.submission_checks import Refusals, check_some_node_offers
from drover.core.constraints import Constraint
from drover.core.errors import BadRequest
from drover.core.gres import node_devices, parse_request
from drover.core.node import Node
from drover.core.node_state import NodeState
from drover.core.resources import Resources

ONE = Resources(1, 0)


def node(name: str, cpus: int = 4, gres: tuple[str, ...] = (), features: tuple[str, ...] = ()) -> Node:
    return Node(name, cpus, 4096, NodeState.UP, 0.0, devices=node_devices(gres), features=frozenset(features))


def refusal(size: Resources, gres: str, constraint: str | None, nodes: list[Node], held: bool = False) -> str | None:
    try:
        check_some_node_offers(size, parse_request(gres), Constraint(constraint) if constraint else None, nodes,
                               held, Refusals())
    except BadRequest as error:
        return str(error)
    return None


def test_a_gpu_no_node_has_is_refused_naming_it_and_what_the_nodes_offer() -> None:
    said = refusal(ONE, "gpu:1", None, [node("n1")])
    assert said is not None and said.startswith("no node has gres gpu (asked 1); nodes offer: none; ")
    assert "--hold" in said
    said = refusal(ONE, "gpu:a100:3", None, [node("n1", gres=("gpu:a100:2", "nic:1")), node("n2", gres=("gpu:a100:1",))])
    assert said is not None and said.startswith(
        "no node has gres gpu:a100 (asked 3); the most one node has is 2; nodes offer: gpu:a100:2, nic:1; ")


def test_a_feature_no_node_has_is_refused_naming_the_features_there_are() -> None:
    said = refusal(ONE, "", "avx512", [node("n1", features=("bigmem",)), node("n2")])
    assert said is not None and said.startswith("no node has the features avx512 (--constraint); nodes offer: bigmem; ")
    assert refusal(ONE, "", "avx512|bigmem", [node("n1", features=("bigmem",))]) is None


def test_what_only_several_nodes_have_between_them_is_refused() -> None:
    nodes = [node("gpus", cpus=2, gres=("gpu:1",)), node("wide", cpus=8, features=("avx512",))]
    said = refusal(ONE, "gpu:1", "avx512", nodes)
    assert said is not None and said.startswith(
        "no one node has all a task asks for together (1 CPU, 0 MiB; gres gpu:1; the features avx512)")
    said = refusal(Resources(4, 0), "gpu:1", None, nodes)  # the GPU node has 2 CPUs, the wide one no GPU
    assert said is not None and "(4 CPUs, 0 MiB; gres gpu:1)" in said
    assert refusal(Resources(2, 0), "gpu:1", None, nodes) is None


@pytest.mark.parametrize("held", [False, True])
def test_with_no_node_known_yet_everything_is_accepted(held: bool) -> None:
    assert refusal(ONE, "gpu:8", "avx512", [], held) is None


def test_a_held_job_is_accepted_to_wait_for_nodes_that_come_later() -> None:
    assert refusal(ONE, "gpu:1", "avx512", [node("n1")], held=True) is None


def test_what_some_node_has_is_accepted() -> None:
    assert refusal(ONE, "gpu:a100:2", "avx512", [node("n1", gres=("gpu:a100:2",), features=("avx512",))]) is None
    assert refusal(ONE, "", None, [node("n1")]) is None
