"""The handler harness runs the controller until it is idle: no test waits for it."""

from __future__ import annotations

from tests.helpers.controller_world import WITHOUT_PROMISES, World


def test_until_idle_starts_what_fits_and_stops_when_nothing_more_can_start(world: World) -> None:
    world.options = WITHOUT_PROMISES  # "nothing more can start": no task promised behind a running one
    world.connect(cpus=2)
    (job,) = world.submit(array="1-5")
    first = world.until_idle()
    assert [order.attempt for order in first] == [f"{job}.1.1", f"{job}.2.1"]
    assert world.until_idle() == []  # the node is full: nothing more, and it returns
    world.started(first[0].attempt)
    world.exited(first[0].attempt)
    assert [order.attempt for order in world.until_idle()] == [f"{job}.3.1"]
