"""The controller's handlers driven as its service drives them, on a real store, without sockets
or processes: a `World` of a store, the state loaded from it and a clock, and the `world`
fixture that makes one on the test's store (`store_url`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from drover.config_schema import SchedulerSection
from drover.controller.effects import JobEnded, Outcome, SendToNode
from drover.controller.handlers.actions import act
from drover.controller.handlers.dispatch import OrderOptions, schedule
from drover.controller.handlers.node_reports import on_node_connected, on_reports
from drover.controller.handlers.submit import submit
from drover.controller.security.auth import Caller, Policy
from drover.controller.state import ControllerState
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import (
    Exited,
    Hello,
    KnownAttempt,
    StartAttempt,
    Started,
)
from drover.store.base import open_store

SHARED = Policy(owner_uid=0, shared=True)


def may_touch_as(user: str) -> Callable[[str, int, str], None]:
    """What the controller hands the actions for a request of `user`, a plain user."""
    caller = Caller(user, 1000, is_admin=False)
    return lambda owner, job_id, verb: SHARED.may_touch(caller, owner, job_id, verb)


# The settings of a test that counts what one pass starts, or the tasks left waiting: with
# promises on the waiting ones would be promised behind the started ones.
WITHOUT_PROMISES = OrderOptions(1.0, scheduler=SchedulerSection(promises=False))

OK = {"exit_code": 0, "signal": None, "failure": None, "timed_out": False, "terminated": False, "out_of_memory": False}


class World:
    """A store, the state loaded from it, and a clock; every outcome is committed as the service does."""

    def __init__(self, where: str | Path) -> None:
        """`where`: a store URL, or the path of an SQLite file."""
        self.url = where if isinstance(where, str) else f"sqlite://{where}"
        self.store = open_store(self.url)
        self.state = ControllerState.from_working_set(self.store.load_working_set())
        self.now = 1000.0
        self.sent: list[SendToNode] = []
        self.ended: list[int] = []
        self.options = OrderOptions(1.0)  # the cluster's settings a test may change (a kill grace of 1 s)

    def run(self, outcome: Outcome) -> Outcome:
        self.now += 1
        if outcome.changes:
            self.store.commit(outcome.changes)
            self.state.tallies.committed(outcome.changes, 0.0)  # the metrics count what is committed
            self.state.changed(outcome.changes)
        self.sent += [e for e in outcome.effects if isinstance(e, SendToNode)]
        self.ended += [e.job_id for e in outcome.effects if isinstance(e, JobEnded)]
        self.state.check_invariants()
        return outcome

    def submit(self, owner: str = "alice", **fields: object) -> list[int]:
        spec = JobSubmission(**{"script": "true\n", "workdir": "/tmp", **fields})  # type: ignore[arg-type]
        outcome, ids = submit(self.state, [spec], owner, self.now, self.store)
        self.run(outcome)
        return ids

    def connect(self, node: str = "n1", cpus: int = 2, known: list[KnownAttempt] | None = None) -> None:
        self.run(on_node_connected(self.state, Hello(node, cpus, 4096, known or [], starts_in_place=True), self.now,
                                   self.options, self.store))

    def schedule(self) -> list[StartAttempt]:
        before = len(self.sent)
        self.run(schedule(self.state, self.now, self.store, self.options))
        return [s.message for s in self.sent[before:] if isinstance(s.message, StartAttempt)]

    def until_idle(self, rounds: int = 100) -> list[StartAttempt]:
        """Schedule round after round, as the service does after each event, until a round starts
        nothing more: every start, in order. Fails when it never settles."""
        started: list[StartAttempt] = []
        for _ in range(rounds):
            more = self.schedule()
            if not more:
                return started
            started += more
        raise AssertionError(f"still starting attempts after {rounds} rounds: {[s.attempt for s in started[-5:]]}")

    def exited(self, attempt: str, record: dict[str, object] | None = None, node: str = "n1") -> list[object]:
        before = len(self.sent)
        self.run(on_reports(self.state, node, [Exited(attempt, dict(record or OK))], self.now))
        return [s.message for s in self.sent[before:]]

    def started(self, attempt: str, job_pid: int = 123, node: str = "n1") -> None:
        self.run(on_reports(self.state, node, [Started(attempt, job_pid, self.now)], self.now))

    def act(self, action: str, *refs: str, user: str = "alice") -> list[object]:
        outcome, results = act(self.state, action, list(refs), may_touch_as(user), self.now, self.store)
        self.run(outcome)
        return results

    def act_signal(self, name: str, *refs: str, user: str = "alice") -> list[object]:
        outcome, results = act(self.state, "signal", list(refs), may_touch_as(user), self.now, self.store,
                               signal_name=name)
        self.run(outcome)
        return results

    def running(self) -> tuple[int, str]:
        """One job submitted, dispatched to node n1 and started: its id and attempt's name."""
        self.connect()
        (job,) = self.submit()
        (order,) = self.schedule()
        self.started(order.attempt)
        return job, order.attempt

    def reload(self) -> None:
        options = self.options
        self.store.close()
        self.__init__(self.url)  # type: ignore[misc]
        self.options = options

    def event_kinds(self, job: int) -> list[str]:
        return [e.kind for _, e in self.store.events_of(job, 0, 1000)]


@pytest.fixture
def world(store_url: str) -> Iterator[World]:
    made = World(store_url)
    yield made
    made.store.close()
