"""Queues at run time, on a real (temporary) SQLite store: their switches and settings, who may
turn and change them, users' own queues, moving jobs, and what the planner makes of each."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from drover.config_schema import QueueSection
from drover.controller.effects import Outcome
from drover.controller.handlers import queues
from drover.controller.handlers.actions import act
from drover.controller.handlers.dispatch import OrderOptions, schedule
from drover.controller.handlers.node_reports import on_node_connected
from drover.controller.handlers.queue_load import queue_infos
from drover.controller.handlers.submit import submit
from drover.controller.state import ControllerState
from drover.core.errors import BadRequest, Conflict, Forbidden
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import Hello, StartAttempt
from drover.store.base import open_store

SECTIONS = {
    "short": QueueSection(max_running=1, max_running_per_user=1, owner="carol", nice=5),
    "gpu": QueueSection(nodes=["g*"], max_memory_mib=1000),
    "night": QueueSection(window="nights"),
}
ORDERS = OrderOptions(1.0, SECTIONS)


class Cluster:
    def __init__(self, url: str) -> None:
        self.url = url
        self.store = open_store(url)
        self.state = ControllerState.from_working_set(self.store.load_working_set())
        self.now = time.mktime((2026, 11, 25, 12, 0, 0, 0, 0, -1))  # noon: the night queue is closed

    def run(self, outcome: Outcome) -> Outcome:
        if outcome.changes:
            self.store.commit(outcome.changes)
            self.state.changed(outcome.changes)
        self.state.check_invariants()
        return outcome

    def connect(self, node: str, cpus: int = 4) -> None:
        self.run(on_node_connected(self.state, Hello(node, cpus, 4096), self.now, ORDERS, self.store))

    def submit(self, owner: str = "alice", **fields: object) -> int:
        spec = JobSubmission(**{"script": "true\n", "workdir": "/tmp", **fields})  # type: ignore[arg-type]
        outcome, (job,) = submit(self.state, [spec], owner, self.now, self.store,
                                 queues.queues_in_effect(self.state, SECTIONS))
        self.run(outcome)
        return job

    def schedule(self) -> list[StartAttempt]:
        outcome = self.run(schedule(self.state, self.now, self.store, ORDERS))
        return [effect.message for effect in outcome.effects if isinstance(getattr(effect, "message", None), StartAttempt)]  # type: ignore[attr-defined]

    def reason(self, job: int) -> str:
        return self.state.pending_reasons[job].value

    def switch(self, name: str, action: str, user: str = "root", admin: bool = True, reason: str = "") -> None:
        self.run(queues.switch(self.state, SECTIONS, name, action, reason, user, admin, self.now))

    def change(self, name: str, user: str = "root", admin: bool = True, **settings: str) -> None:
        self.run(queues.change(self.state, SECTIONS, name, settings, user, admin, self.now))


@pytest.fixture
def cluster(store_url: str) -> Iterator[Cluster]:
    made = Cluster(store_url)
    yield made
    made.store.close()


def test_a_stopped_queue_takes_jobs_and_starts_none_until_started(cluster: Cluster) -> None:
    cluster.connect("n1")
    cluster.switch("default", "stop", reason="maintenance")
    job = cluster.submit()
    other = cluster.submit(queue="night", begin_at=None)
    assert cluster.schedule() == []
    assert cluster.reason(job) == "queue_stopped" and cluster.reason(other) == "queue_window"
    (info,) = [q for q in queue_infos(cluster.state, SECTIONS, cluster.now) if q.name == "default"]
    assert info.state == "stopped" and info.reason == "maintenance (root)" and info.pending == 1
    cluster.switch("default", "start")
    assert [order.config["job_id"] for order in cluster.schedule()] == [job]


def test_a_draining_queue_refuses_new_jobs_and_runs_those_it_has(cluster: Cluster) -> None:
    cluster.connect("n1")
    job = cluster.submit()
    cluster.switch("default", "drain")
    with pytest.raises(BadRequest, match="queue default is draining .*: it takes no new jobs"):
        cluster.submit()
    assert [order.config["job_id"] for order in cluster.schedule()] == [job]
    cluster.switch("default", "stop")
    assert cluster.state.queues["default"].state.value == "inactive"


def test_a_closed_window_makes_the_planner_wake_when_it_opens(cluster: Cluster) -> None:
    cluster.connect("n1")
    job = cluster.submit(queue="night")
    assert cluster.schedule() == []
    opens = time.mktime((2026, 11, 25, 18, 0, 0, 0, 0, -1))
    assert cluster.state.wake_at == opens and "opens 2026-11-25 18:00:00" in cluster.state.pending_reasons[job].detail
    cluster.now = opens
    assert [order.config["job_id"] for order in cluster.schedule()] == [job]


def test_queue_limits_nodes_memory_and_nice(cluster: Cluster) -> None:
    cluster.connect("n1")
    cluster.connect("g1")
    first, second = cluster.submit(queue="short"), cluster.submit(queue="short", owner="bob")
    gpu = cluster.submit(queue="gpu")
    orders = cluster.schedule()
    placed = {order.config["job_id"]: order for order in orders}
    assert set(placed) == {first, gpu} and placed[gpu].config["node"] == "g1"  # its queue's only node
    assert placed[first].config.get("queue_nice") == 5 and "queue_nice" not in placed[gpu].config
    assert cluster.reason(second) == "queue_limit"
    with pytest.raises(BadRequest, match="over queue gpu's limit of 1000M"):
        cluster.submit(queue="gpu", memory_mib=2000)
    cluster.change("short", max_running="5")
    third = cluster.submit(queue="short")  # alice's second: one per user
    assert [order.config["job_id"] for order in cluster.schedule()] == [second]
    assert cluster.reason(third) == "user_limit"


def test_who_may_turn_and_change_a_queue(cluster: Cluster) -> None:
    with pytest.raises(Forbidden, match="only an operator may stop queue default"):
        cluster.switch("default", "stop", user="alice", admin=False)
    cluster.switch("short", "stop", user="carol", admin=False)  # its owner
    cluster.change("short", user="carol", admin=False, max_running="3", window="weekends")
    with pytest.raises(Forbidden, match="only an operator may change priority"):
        cluster.change("short", user="carol", admin=False, priority="10")
    with pytest.raises(Forbidden, match="only its owner or an operator"):
        cluster.change("short", user="alice", admin=False, max_running="9")
    with pytest.raises(BadRequest, match="max_running takes a whole number"):
        cluster.change("short", max_running="lots")
    with pytest.raises(BadRequest, match="unknown queue setting 'colour'"):
        cluster.change("short", colour="red")
    cluster.change("short", max_running="")  # back to drover.toml's
    queue = queues.queue_named(cluster.state, SECTIONS, "short")
    assert queue.max_running == 1 and queue.window is not None and queue.record.settings == {"window": "weekends"}


def test_users_own_queues_where_the_cluster_allows_them(cluster: Cluster) -> None:
    def create(name: str, user: str = "alice", allowed: bool = True, **settings: str) -> None:
        cluster.run(queues.create(cluster.state, SECTIONS, name, settings, user, False, allowed, cluster.now))

    with pytest.raises(Forbidden, match="user_queues is off"):
        create("mine", allowed=False)
    with pytest.raises(Forbidden, match="only an operator may set priority"):
        create("mine", priority="5")
    create("mine", max_running="2")
    with pytest.raises(Conflict, match="exists already"):
        create("mine", user="bob")
    queue = queues.queue_named(cluster.state, SECTIONS, "mine")
    assert queue.owner == "alice" and queue.max_running == 2 and queue.defined_in == "drover queue create"
    job = cluster.submit(queue="mine")
    with pytest.raises(Conflict, match="still has jobs"):
        cluster.run(queues.delete(cluster.state, SECTIONS, "mine", "alice", False, cluster.now))
    outcome, (result,) = act(cluster.state, "alter", [str(job)], lambda *_: None, cluster.now, cluster.store,
                             queue=queues.queue_named(cluster.state, SECTIONS, "default"))
    cluster.run(outcome)
    assert result.ok and result.message == "queue default"
    assert cluster.store.load_job(job).spec.queue == "default"  # and so it is stored
    with pytest.raises(Forbidden):
        cluster.run(queues.delete(cluster.state, SECTIONS, "mine", "bob", False, cluster.now))
    cluster.run(queues.delete(cluster.state, SECTIONS, "mine", "alice", False, cluster.now))
    assert "mine" not in queues.queues_in_effect(cluster.state, SECTIONS)


def test_a_job_moves_queue_only_before_it_started_and_where_it_fits(cluster: Cluster) -> None:
    cluster.connect("n1")
    job = cluster.submit(memory_mib=2000, hold=True)
    gpu = queues.queue_named(cluster.state, SECTIONS, "gpu")
    outcome, (result,) = act(cluster.state, "alter", [str(job)], lambda *_: None, cluster.now, cluster.store,
                             queue=gpu)
    assert not result.ok and "over queue gpu's limit of 1000M" in result.message
    started = cluster.submit()
    cluster.schedule()
    outcome, (result,) = act(cluster.state, "alter", [str(started)], lambda *_: None, cluster.now, cluster.store,
                             queue=gpu)
    assert not result.ok and "has tasks that started" in result.message


def test_queue_records_outlive_the_controller(cluster: Cluster) -> None:
    cluster.switch("night", "stop", reason="broken")
    cluster.change("gpu", nodes="g1,g2")
    cluster.run(queues.create(cluster.state, SECTIONS, "mine", {}, "alice", False, True, cluster.now))
    again = Cluster(cluster.url)
    found = queues.queues_in_effect(again.state, SECTIONS)
    assert found["night"].state.value == "stopped" and found["night"].record.reason == "broken (root)"
    assert found["gpu"].nodes == ("g1", "g2") and found["mine"].owner == "alice"
