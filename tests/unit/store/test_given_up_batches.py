"""Cleanup steps given up after their jobs ended, for many attempts in one commit (a node whose
mail or spool removal fails gives up that step for each attempt it ends): their stored cleanup
records are read in one statement and written in one, not two statements an attempt, and end up
as when each was committed on its own."""

from __future__ import annotations

from typing import Any

from tests.helpers.controller_world import World

from drover.controller.handlers.node_reports import on_reports
from drover.protocol.node_channel import Progress
from drover.records import GivenUpStep
from drover.store.base import Changes

TASKS = 12


class CountedDb:
    """The store's connection, counting the statements sent through it by what they touch."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.sent: list[str] = []

    def execute(self, sql: str, parameters: Any = ()) -> Any:
        self.sent.append(sql)
        return self.db.execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any) -> Any:
        self.sent.append(sql)
        return self.db.executemany(sql, parameters)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def ended_array(url: str) -> tuple[World, int, list[tuple[int, int, int]]]:
    """An array of TASKS tasks, each run once and ended: its attempts' keys."""
    world = World(url)
    world.connect(cpus=TASKS)
    (job_id,) = world.submit(array=f"1-{TASKS}")
    orders = world.schedule()
    assert len(orders) == TASKS
    for order in orders:
        world.exited(order.attempt)
    assert job_id not in world.state.jobs  # ended: its attempts are in the store alone
    return world, job_id, [(job_id, index, 1) for index in range(1, TASKS + 1)]


def steps(index: int) -> list[GivenUpStep]:
    return [{"step": "mail", "tries": 3, "error": f"no mail server ({index})"},
            {"step": "remove_spool", "tries": 2, "error": "busy"}]


def cleanups(world: World, job_id: int) -> dict[int, object]:
    return {attempt.index: attempt.cleanup for attempt in world.store.attempts_of(job_id)}


def test_steps_given_up_for_many_ended_attempts_cost_one_read_and_one_write(store_url: str) -> None:
    world, job_id, keys = ended_array(store_url)
    changes = Changes()
    for key in [*keys, (job_id, TASKS + 5, 1)]:  # and an attempt the store never had: nothing to add to
        for step in steps(key[1]):
            changes.given_up_step(*key, step)
    counted = CountedDb(world.store.db)  # type: ignore[attr-defined]
    world.store.db = counted  # type: ignore[attr-defined]
    world.store.commit(changes)
    touching = [sql for sql in counted.sent if "cleanup" in sql]
    assert len(touching) == 2, touching  # one read, one write, for TASKS attempts
    for index, cleanup in cleanups(world, job_id).items():
        assert cleanup is not None and cleanup["given_up"] == steps(index)


def test_the_steps_given_up_together_are_stored_as_one_by_one(store_url: str, tmp_path: Any) -> None:
    together, job_id, keys = ended_array(store_url)
    alone, alone_job, alone_keys = ended_array(f"sqlite://{tmp_path / 'alone.db'}")
    changes = Changes()
    for key in keys:
        for step in steps(key[1]):
            changes.given_up_step(*key, step)
    together.store.commit(changes)
    for key in alone_keys:
        for step in steps(key[1]):
            one = Changes()
            one.given_up_step(*key, step)
            alone.store.commit(one)
    assert cleanups(together, job_id) == cleanups(alone, alone_job)


def test_the_nodes_of_a_frames_ended_attempts_are_read_at_once(store_url: str) -> None:
    """A node's late reports of many ended attempts are checked against the node that ran each
    (attempt_nodes.ran_on): the store is asked once for all of them, not once a report."""
    world, job_id, keys = ended_array(store_url)
    assert world.store.attempt_nodes([*keys, (job_id, TASKS + 5, 1)]) == {key: "n1" for key in keys}
    counted = CountedDb(world.store.db)  # type: ignore[attr-defined]
    world.store.db = counted  # type: ignore[attr-defined]
    frame = [Progress(f"{j}.{i}.{n}", ["mail"], "mail", 3, "no mail server", given_up=True) for j, i, n in keys]
    world.run(on_reports(world.state, "n1", list(frame), world.now, store=world.store))
    asked = [sql for sql in counted.sent if sql.lstrip().upper().startswith("SELECT") and " node " in sql]
    assert len(asked) == 1, asked
    for cleanup in cleanups(world, job_id).values():
        assert cleanup is not None and cleanup["given_up"] == [{"step": "mail", "tries": 3, "error": "no mail server"}]
