"""A queue in error on a node (Grid Engine's queue instance queue@node in state E), on a real
store: a failing method sets it, the planner keeps the queue's jobs off that node and says why,
other queues' jobs still run there, it outlives a reload, and an operator clears it. And the
switches FORBID_RESCHEDULE and FORBID_APPERROR as the controller applies them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from drover.config_schema import QueueSection, SchedulerSection
from drover.controller.effects import Outcome
from drover.controller.handlers import queues
from drover.controller.handlers.dispatch import OrderOptions, schedule
from drover.controller.handlers.node_reports import on_node_connected, on_reports, resume_node
from drover.controller.handlers.queue_load import queue_infos
from drover.controller.handlers.submit import submit
from drover.controller.reads.views import node_info
from drover.controller.state import ControllerState
from drover.core.errors import Conflict
from drover.core.exit_status import GRID_ENGINE, PLAIN, ExitSemantics
from drover.core.node_state import NodeState
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import Exited, Hello, StartAttempt, Started
from drover.store.base import open_store

SECTIONS = {"fast": QueueSection(prolog="/etc/fast-prolog"), "slow": QueueSection()}
OK = {"exit_code": 0, "signal": None, "failure": None, "timed_out": False, "terminated": False, "out_of_memory": False}


class Cluster:
    def __init__(self, url: str, exits: ExitSemantics = GRID_ENGINE) -> None:
        self.url, self.exits = url, exits
        self.orders = OrderOptions(1.0, SECTIONS, exits=exits)
        self.store = open_store(url)
        self.state = ControllerState.from_working_set(self.store.load_working_set())
        self.now = 1000.0

    def run(self, outcome: Outcome) -> Outcome:
        self.now += 1
        if outcome.changes:
            self.store.commit(outcome.changes)
            self.state.changed(outcome.changes)
        self.state.check_invariants()
        return outcome

    def connect(self, node: str) -> None:
        self.run(on_node_connected(self.state, Hello(node, 2, 4096), self.now, self.orders, self.store))

    def submit(self, queue: str, cpus: int = 1) -> int:
        spec = JobSubmission(script="true\n", workdir="/tmp", queue=queue, cpus=cpus)
        outcome, (job,) = submit(self.state, [spec], "alice", self.now, self.store,
                                 queues.queues_in_effect(self.state, SECTIONS))
        self.run(outcome)
        return job

    def schedule(self) -> list[StartAttempt]:
        outcome = self.run(schedule(self.state, self.now, self.store, self.orders))
        return [e.message for e in outcome.effects if isinstance(getattr(e, "message", None), StartAttempt)]  # type: ignore[attr-defined]

    def ends(self, attempt: str, node: str, **record: object) -> None:
        self.run(on_reports(self.state, node, [Started(attempt, 1, self.now)], self.now, self.exits))
        self.run(on_reports(self.state, node, [Exited(attempt, {**OK, **record})], self.now, self.exits))  # type: ignore[typeddict-item]

    def task_state(self, job: int) -> str:
        if job in self.state.jobs:
            return self.state.jobs[job].tasks[0].state.value
        ended = self.store.load_job(job)  # an ended job leaves the working set
        assert ended is not None
        return ended.tasks[0].state.value

    def reload(self) -> None:
        self.store.close()
        self.__init__(self.url, self.exits)  # type: ignore[misc]


@pytest.fixture
def cluster(store_url: str) -> Iterator[Cluster]:
    made = Cluster(store_url)
    yield made
    made.store.close()


PROLOG_FAILED = {"exit_code": None, "failure": "the queue prolog exited with status 1; the job did not run",
                 "methods": [{"step": "prolog", "level": "queue", "exit_code": 1}]}


def test_gridengine_manpage_prolog_failure_sets_the_queue_instance_in_error_not_the_node(cluster: Cluster) -> None:
    cluster.connect("n1")
    job = cluster.submit("fast")
    (order,) = cluster.schedule()
    cluster.ends(order.attempt, "n1", **PROLOG_FAILED)
    node = cluster.state.nodes["n1"]
    assert node.state is NodeState.UP and node.reason is None
    assert node.queue_errors == {"fast": f"the queue prolog exited with status 1 (attempt {order.attempt})"}
    assert cluster.task_state(job) == "pending"  # requeued
    # the queue's jobs no longer start there, and the planner says why
    assert cluster.schedule() == []
    waiting = cluster.state.pending_reasons[job]
    assert waiting.value == "no_node_matches"
    assert "queue fast is in error on n1" in waiting.detail and "--queue fast" in waiting.detail
    # another queue's jobs still run there
    other = cluster.submit("slow")
    (started,) = cluster.schedule()
    assert started.attempt.startswith(f"{other}.")
    # shown by drover nodes and drover queue show
    (shown,) = node_info(cluster.state)
    assert shown.state == "up" and shown.queue_errors == node.queue_errors
    infos = {info.name: info for info in queue_infos(cluster.state, SECTIONS, cluster.now)}
    assert list(infos["fast"].errors) == ["n1"] and infos["slow"].errors == {}
    # kept in the store
    cluster.reload()
    assert cluster.state.nodes["n1"].queue_errors == node.queue_errors


def test_a_queue_in_error_on_one_node_runs_its_jobs_on_the_others(cluster: Cluster) -> None:
    cluster.connect("n1")
    job = cluster.submit("fast")
    (order,) = cluster.schedule()
    cluster.ends(order.attempt, "n1", **PROLOG_FAILED)
    cluster.connect("n2")
    (again,) = cluster.schedule()
    assert again.attempt == f"{job}.0.2" and cluster.state.attempt_by_name(again.attempt).node == "n2"  # type: ignore[union-attr]


def test_a_job_that_waits_for_room_says_its_queue_is_in_error_where_there_is_room(cluster: Cluster) -> None:
    # The reason of a job left waiting: with promises it would be promised behind the first on n2.
    cluster.orders = OrderOptions(1.0, SECTIONS, exits=cluster.exits, scheduler=SchedulerSection(promises=False))
    cluster.connect("n1")
    cluster.connect("n2")
    cluster.state.nodes["n1"].queue_errors["fast"] = "the node epilog exited with status 1 (attempt 9.0.1)"
    first = cluster.submit("fast", cpus=2)
    (order,) = cluster.schedule()
    assert order.attempt == f"{first}.0.1" and cluster.state.attempt_by_name(order.attempt).node == "n2"  # type: ignore[union-attr]
    second = cluster.submit("fast", cpus=2)
    assert cluster.schedule() == []
    waiting = cluster.state.pending_reasons[second]
    assert waiting.value == "resources" and "queue fast is in error on n1" in waiting.detail, waiting


def test_an_operator_clears_one_queue_on_a_node_or_every_queue_with_the_node(cluster: Cluster) -> None:
    cluster.connect("n1")
    cluster.state.nodes["n1"].queue_errors.update({"fast": "x", "slow": "y"})
    with pytest.raises(Conflict, match="queue default is not in error on node n1"):
        resume_node(cluster.state, "n1", cluster.now, "default")
    cluster.run(resume_node(cluster.state, "n1", cluster.now, "fast"))
    assert cluster.state.nodes["n1"].queue_errors == {"slow": "y"}
    job = cluster.submit("fast")
    (order,) = cluster.schedule()
    assert order.attempt == f"{job}.0.1"
    cluster.run(resume_node(cluster.state, "n1", cluster.now))  # the node is up: its queues are cleared
    assert cluster.state.nodes["n1"].queue_errors == {}
    with pytest.raises(Conflict, match="only a node in error, draining or drained, or with a queue in error"):
        resume_node(cluster.state, "n1", cluster.now)


def test_a_node_that_could_not_prepare_an_attempt_still_goes_to_error(cluster: Cluster) -> None:
    cluster.connect("n1")
    job = cluster.submit("fast")
    (order,) = cluster.schedule()
    cluster.run(on_reports(cluster.state, "n1", [Exited(order.attempt, {  # type: ignore[typeddict-item]
        **OK, "exit_code": None, "failure": "the node could not prepare the attempt: disk full", "node_fault": True})],
        cluster.now))
    node = cluster.state.nodes["n1"]
    assert node.state is NodeState.ERROR and node.queue_errors == {} and cluster.task_state(job) == "pending"


@pytest.mark.parametrize(("exits", "code", "state"), [
    (GRID_ENGINE, 99, "pending"), (GRID_ENGINE, 100, "held"),
    (ExitSemantics(forbid_reschedule=True), 99, "failed"), (ExitSemantics(forbid_reschedule=True), 100, "held"),
    (ExitSemantics(forbid_apperror=True), 99, "pending"), (ExitSemantics(forbid_apperror=True), 100, "failed"),
    (PLAIN, 99, "failed"), (PLAIN, 100, "failed"), (PLAIN, 0, "completed"),
])
def test_gridengine_forbid_reschedule_and_forbid_apperror_as_the_controller_applies_them(
        store_url: str, exits: ExitSemantics, code: int, state: str) -> None:
    cluster = Cluster(store_url, exits)
    try:
        cluster.connect("n1")
        job = cluster.submit("slow")
        (order,) = cluster.schedule()
        assert order.config.get("forbid_reschedule", False) is exits.forbid_reschedule
        assert order.config.get("forbid_apperror", False) is exits.forbid_apperror
        cluster.ends(order.attempt, "n1", exit_code=code)
        assert cluster.task_state(job) == state
    finally:
        cluster.store.close()
