"""Which node may speak for an attempt (handlers/attempt_nodes.py), the one check every keeper of
what nodes say makes: the node the working set sent it to, the node it was lost with, or for an
attempt the working set no longer holds, the node the store says; no other."""

from __future__ import annotations

from tests.helpers.controller_world import World

from drover.controller.handlers.attempt_nodes import ran_on, sent_to
from drover.controller.handlers.node_reports import on_node_disconnected, on_nodes_lost


def nodes_of(world: World, name: str) -> set[str]:
    return {node for node in ("n1", "n2") if ran_on(world.state, node, name, lambda _: "n2")}


def test_the_working_set_says_first_then_a_lost_attempts_node_then_the_store(world: World) -> None:
    world.connect("n1")
    (job,) = world.submit()
    (order,) = world.schedule()
    name = order.attempt
    assert sent_to(world.state, name) == "n1"
    assert nodes_of(world, name) == {"n1"}  # the working set's word, whatever the store would say
    world.run(on_node_disconnected(world.state, "n1", world.now))
    world.now += 1000
    world.run(on_nodes_lost(world.state, world.now, 60.0))  # requeued as attempt 2
    assert nodes_of(world, name) == {"n1"}
    world.state.attempts.pop((job, 0, 1), None)  # as once its job has ended: only its loss is known
    assert name in world.state.lost_attempts
    assert sent_to(world.state, name) is None and nodes_of(world, name) == {"n1"}
    world.state.lost_attempts.clear()  # neither held nor lost: the store's word
    assert nodes_of(world, name) == {"n2"}
    assert not ran_on(world.state, "n2", name)  # and without a store, no node's


def test_an_attempt_nobody_sent_is_no_nodes() -> None:
    from drover.controller.state import ControllerState

    state = ControllerState({}, {}, {}, 1)
    assert sent_to(state, "7.0.1") is None and sent_to(state, "not an attempt") is None
    assert not ran_on(state, "n1", "7.0.1") and not ran_on(state, "n1", "7.0.1", lambda _: None)
