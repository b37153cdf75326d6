"""Reasons an operator or a queue's owner gives (a node's drain, a queue's stop, drain or
suspension) are shown on other users' and operators' terminals by `drover nodes`, `drover queue
list`, squeue and qstat: one line of printable characters, at most 1000 of them. A reason that is
not is refused, and nothing of the request is done."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.unit.controller.test_queue_handlers import Cluster
from tests.unit.controller.test_queue_suspension import SuspensionWorld

from drover.controller.handlers.node_reports import drain_node
from drover.core.errors import BadRequest
from drover.core.node_state import NodeState

UNSHOWABLE = [
    "disk swap\x1b[2J\x1b[Hall jobs cancelled by root",  # clears the lister's screen and writes over it
    "maintenance\nn2 DOWN",  # a line of its own in a listing
    "fan\rOK",
    "bell\x07",
    "csi\x9b31m",  # C1's one-byte CSI
    "x" * 1001,
]


@pytest.fixture
def cluster(store_url: str) -> Iterator[Cluster]:
    made = Cluster(store_url)
    yield made
    made.store.close()


@pytest.fixture
def world(store_url: str) -> Iterator[SuspensionWorld]:
    made = SuspensionWorld(store_url)
    yield made
    made.store.close()


@pytest.mark.parametrize("reason", UNSHOWABLE)
def test_a_drain_reason_that_would_write_on_a_listers_terminal_is_refused(cluster: Cluster, reason: str) -> None:
    cluster.connect("n1")
    with pytest.raises(BadRequest, match="one line of at most 1000 printable characters"):
        drain_node(cluster.state, "n1", reason, cluster.now)
    assert cluster.state.nodes["n1"].state is NodeState.UP and not cluster.state.nodes["n1"].drain
    cluster.run(drain_node(cluster.state, "n1", "disk swap (ticket 12) — back at 14:00", cluster.now))
    assert cluster.state.nodes["n1"].drain == "disk swap (ticket 12) — back at 14:00"


@pytest.mark.parametrize("reason", UNSHOWABLE)
def test_a_queue_switch_reason_that_would_write_on_a_listers_terminal_is_refused(cluster: Cluster,
                                                                                 reason: str) -> None:
    with pytest.raises(BadRequest, match="one line of at most 1000 printable characters"):
        cluster.switch("short", "stop", user="carol", admin=False, reason=reason)
    job = cluster.submit(queue="short")
    cluster.connect("n1")
    assert cluster.schedule(), "the queue was stopped though its reason was refused"
    assert cluster.state.jobs[job].tasks[0].state.is_active


@pytest.mark.parametrize("reason", UNSHOWABLE)
def test_a_queue_suspension_reason_that_would_write_on_a_listers_terminal_is_refused(world: SuspensionWorld,
                                                                                     reason: str) -> None:
    job, _ = world.running_with()
    with pytest.raises(BadRequest, match="one line of at most 1000 printable characters"):
        world.suspend_queue("default", reason=reason)
    assert world.task(job) == (world.state.jobs[job].tasks[0].state, frozenset())
    assert not world.state.jobs[job].tasks[0].suspended_by
