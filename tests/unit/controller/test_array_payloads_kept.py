"""A pass that starts an array's next task takes its script and environment from what the
controller kept at the array's first start (ControllerState.array_payloads), not from the store
again; a single job's payload is read as before; a job leaving the working set drops its own."""

from __future__ import annotations

from typing import Any

import pytest
from tests.helpers.controller_world import WITHOUT_PROMISES, World, world  # noqa: F401  (a fixture)

from drover.controller import state as controller_state


def count_reads(world: World, monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:  # noqa: F811
    reads: list[list[int]] = []
    read = world.store.job_payloads

    def counted(job_ids: Any) -> Any:
        reads.append(list(job_ids))
        return read(job_ids)

    monkeypatch.setattr(world.store, "job_payloads", counted)
    return reads


def test_an_arrays_payload_is_read_once_for_all_its_tasks(world: World, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    reads = count_reads(world, monkeypatch)
    world.options = WITHOUT_PROMISES  # one start a pass: each of the array's tasks in a pass of its own
    world.connect(cpus=1)
    (array,) = world.submit(array="1-4", script="echo task\n", environment={"A": "1"})
    (single,) = world.submit(script="echo single\n")
    (first,) = world.schedule()
    for index in range(4):
        world.started(first.attempt)
        world.exited(first.attempt)
        (first,) = world.schedule()
        if index < 3:
            assert first.attempt.startswith(f"{array}.") and first.script == "echo task\n"
            assert first.config["environment"]["A"] == "1"
    assert first.attempt.startswith(f"{single}.") and first.script == "echo single\n"
    assert [read for read in reads if read] == [[array], [single]]  # (a node's hello reads none)


def test_an_arrays_payload_is_let_go_when_the_job_leaves_and_none_beyond_the_bound_is_kept(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    world.options = WITHOUT_PROMISES
    world.connect(cpus=1)
    (array,) = world.submit(array="1-2")
    (order,) = world.schedule()
    state = world.state
    assert array in state.array_payloads and state.array_payload_bytes == state.jobs[array].payload_bytes > 0
    for _ in range(2):
        world.started(order.attempt)
        world.exited(order.attempt)
        orders = world.schedule()
        order = orders[0] if orders else order
    assert array not in state.jobs and state.array_payloads == {} and state.array_payload_bytes == 0
    monkeypatch.setattr(controller_state, "ARRAY_PAYLOADS_KEPT", 1)
    (other,) = world.submit(array="1-2")
    world.schedule()
    assert state.array_payloads == {} and state.array_payload_bytes == 0
