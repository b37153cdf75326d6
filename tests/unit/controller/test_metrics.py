"""GET /metrics: what the controller's service holds, counted the way the service counts it
(through its shell, on a real SQLite store, on a fake clock), written in OpenMetrics and read back
with prometheus_client's own parsers; and who may read it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.parser import text_string_to_metric_families as text_families

from drover.api.app import create_app
from drover.api.metrics import MetricsOnly
from drover.config_schema import SchedulerSection
from drover.controller.handlers.node_reports import on_node_connected
from drover.controller.reads.metrics import METRICS
from drover.controller.security.auth import Policy
from drover.controller.service import ControllerService, Settings
from drover.controller.shell.transaction import Scope
from drover.core.errors import Standby
from drover.protocol.api import JobSubmission
from drover.protocol.node_channel import Exited, Hello, Started
from drover.store.sqlite import SqliteStore

OK = {"exit_code": 0, "signal": None, "failure": None, "timed_out": False, "terminated": False, "out_of_memory": False}
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
T = TypeVar("T")
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


class Controller:
    """A service on a store in `where`, with node n1 of 6 CPUs and 8 GiB and one GPU. Made and
    used on a running loop, as the daemon's service is."""

    def __init__(self, where: Path, settings: Settings) -> None:
        self.store = SqliteStore(str(where / "drover.db"))
        self.now = 1000.0
        self.service = ControllerService(self.store, settings, clock=lambda: self.now)
        state = self.service.state
        self.service.shell.run(lambda: on_node_connected(state, Hello("n1", 6, 8192, gres=["gpu"]), self.now,
                                                         self.service.orders, self.store),
                               Scope(nodes=frozenset({"n1"})))

    async def turn(self) -> None:
        """Let the service's loop turn end: the reports of the turn, and the pass they ask for."""
        for _ in range(3):
            await asyncio.sleep(0)

    async def report(self, *reports: Any) -> None:
        self.now += 1
        self.service.reports.add("n1", list(reports))
        await self.turn()

    def attempt_of(self, job_id: int) -> str:
        task = self.service.state.jobs[job_id].tasks[0]
        return f"{job_id}.0.{task.attempt}"

    async def get(self, path: str, uid: int, accept: str = OPENMETRICS, policy: Policy | None = None) -> tuple[int, dict[str, str], bytes]:
        app = create_app(self.service, policy or Policy(owner_uid=0, shared=True), lambda: None)
        return await asgi_get(app, path, accept, {"peer": (1, uid, uid)})


async def asgi_get(app: Any, path: str, accept: str, state: dict[str, Any] | None = None) -> tuple[int, dict[str, str], bytes]:
    scope = {"type": "http", "http_version": "1.1", "method": "GET", "scheme": "http", "path": path,
             "raw_path": path.encode(), "root_path": "", "query_string": b"",
             "headers": [(b"accept", accept.encode())], "server": ("test", 80), "client": ("test", 1),
             "state": state or {}}
    replies: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        replies.append(message)

    await app(scope, receive, send)
    head = replies[0]
    headers = {k.decode(): v.decode() for k, v in head["headers"]}
    return head["status"], headers, b"".join(r.get("body", b"") for r in replies[1:])


def parsed(body: bytes) -> tuple[dict[str, Any], Samples]:
    families = {family.name: family for family in text_string_to_metric_families(body.decode())}
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families.values() for s in f.samples}
    return families, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[name, tuple(sorted(labels.items()))]


def run(where: Path, settings: Settings, scenario: Callable[[Controller], Awaitable[T]]) -> T:
    async def main() -> T:
        controller = Controller(where, settings)
        try:
            return await scenario(controller)
        finally:
            controller.store.close()

    return asyncio.run(main())


LICENSED = Settings(licenses={"matlab": 3})


def test_the_exposition_is_openmetrics_that_says_what_the_service_holds(tmp_path: Path) -> None:
    async def scenario(controller: Controller) -> tuple[int, dict[str, str], bytes]:
        service = controller.service
        two = JobSubmission(script="true\n", workdir="/tmp", cpus=2, memory_mib=1024, licenses={"matlab": 1})
        first, second, third = service.submit([two, two, two], "alice")
        service.submit([JobSubmission(script="true\n", workdir="/tmp", gres=["gpu"], queue="default")], "bob")
        await controller.turn()
        await controller.report(Started(controller.attempt_of(first), 10, controller.now),
                                Started(controller.attempt_of(second), 11, controller.now))
        await controller.report(Exited(controller.attempt_of(first), dict(OK)))  # type: ignore[arg-type]
        return await controller.get("/metrics", 0)

    status, headers, body = run(tmp_path, LICENSED, scenario)
    assert status == 200
    assert headers["content-type"].startswith(OPENMETRICS)
    assert body.endswith(b"# EOF\n")
    families, samples = parsed(body)
    assert {metric.name for metric in METRICS} <= set(families)
    for metric in METRICS:
        assert families[metric.name].type == metric.kind
        assert families[metric.name].documentation == metric.help
    # alice's first two jobs and bob's started at once (5 of 6 CPUs); the first completed and
    # left, and the third started in the room it freed. Bob's holds the one GPU.
    running = {labels: v for (name, labels), v in samples.items() if name == "drover_jobs" and v}
    assert sum(running.values()) == 3
    assert value(samples, "drover_jobs", state="running", queue="default", user="alice") == 1
    assert value(samples, "drover_attempts_started_total") == 4
    assert value(samples, "drover_attempts_ended_total", outcome="completed") == 1
    assert value(samples, "drover_node_cpus", node="n1") == 6
    cpus_held = value(samples, "drover_node_cpus_allocated", node="n1")
    assert cpus_held == value(samples, "drover_queue_cpus_allocated", queue="default") == 2 + 2 + 1
    assert value(samples, "drover_node_memory_bytes", node="n1") == 8192 * 1024 * 1024
    assert value(samples, "drover_node_devices", node="n1", device="gpu") == 1
    assert value(samples, "drover_node_devices_allocated", node="n1", device="gpu") == 1
    assert value(samples, "drover_node_state", node="n1", state="up") == 1
    assert value(samples, "drover_node_state", node="n1", state="down") == 0
    assert value(samples, "drover_licenses", license="matlab") == 3
    assert value(samples, "drover_licenses_used", license="matlab") == 2
    assert value(samples, "drover_store_commits_total") >= 4
    commits = value(samples, "drover_store_commit_duration_seconds_count")
    assert commits == value(samples, "drover_store_commits_total")
    assert value(samples, "drover_store_commit_duration_seconds_bucket", le="+Inf") == commits
    assert value(samples, "drover_scheduler_passes_total") >= 1
    assert value(samples, "drover_store_size_bytes") > 0
    assert value(samples, "drover_controller_resident_memory_bytes") > 1024 * 1024


def test_a_waiting_job_is_counted_by_its_reason(tmp_path: Path) -> None:
    async def scenario(controller: Controller) -> bytes:
        too_many = JobSubmission(script="true\n", workdir="/tmp", cpus=4)
        controller.service.submit([too_many, too_many], "carol")
        controller.service.submit([JobSubmission(script="true\n", workdir="/tmp", array="1-3", hold=True)], "dan")
        await controller.turn()
        return (await controller.get("/metrics", 0))[2]

    # The planner's reason for a job left waiting; a promised one is counted as such in
    # tests/unit/controller/test_promised_views.py.
    _, samples = parsed(run(tmp_path, Settings(scheduler=SchedulerSection(promises=False)), scenario))
    assert value(samples, "drover_jobs_pending", reason="resources") == 1
    assert value(samples, "drover_jobs", state="pending", queue="default", user="carol") == 1
    assert value(samples, "drover_tasks", state="pending", queue="default", user="carol") == 1
    assert value(samples, "drover_tasks", state="dispatched", queue="default", user="carol") == 1
    assert value(samples, "drover_jobs", state="held", queue="default", user="dan") == 1
    assert value(samples, "drover_tasks", state="held", queue="default", user="dan") == 3


def test_a_client_that_asks_for_plain_text_gets_the_prometheus_text_format(tmp_path: Path) -> None:
    status, headers, body = run(tmp_path, Settings(), lambda controller: controller.get("/metrics", 0,
                                                                                        accept="text/plain"))
    assert status == 200
    assert headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    names = {family.name for family in text_families(body.decode())}
    assert "drover_store_commits" in names and "drover_jobs" in names


def test_a_user_who_is_no_operator_is_refused_unless_the_metrics_are_public(tmp_path: Path) -> None:
    async def user_then_root(controller: Controller) -> list[tuple[int, dict[str, str], bytes]]:
        return [await controller.get("/metrics", 54321), await controller.get("/metrics", 0)]

    (status, _, body), (root, _, _) = run(tmp_path / "closed", Settings(), user_then_root)
    assert status == 403
    assert b"only root and the cluster's operators read the controller's metrics" in body
    assert b"public_metrics = true" in body
    assert root == 200  # root is an operator
    (status, _, body), _ = run(tmp_path / "opened", Settings(public_metrics=True), user_then_root)
    assert status == 200 and b"drover_jobs" in body


def test_the_plain_listener_serves_metrics_alone(tmp_path: Path) -> None:
    async def scenario(controller: Controller) -> list[tuple[int, dict[str, str], bytes]]:
        app = MetricsOnly()
        before = await asgi_get(app, "/metrics", OPENMETRICS)  # not the active controller yet
        app.service = controller.service
        return [before, await asgi_get(app, "/metrics", OPENMETRICS), await asgi_get(app, "/v1/jobs", OPENMETRICS)]

    before, served, elsewhere = run(tmp_path, Settings(public_metrics=True), scenario)
    assert before[0] == 503
    assert served[0] == 200 and served[1]["content-type"].startswith(OPENMETRICS)
    assert "drover_jobs" in parsed(served[2])[0]
    assert elsewhere[0] == 404


def test_the_plain_listener_is_refused_unless_the_metrics_are_public() -> None:
    from drover.config_schema import ControllerSection
    from drover.controller.main import _metrics_address

    with pytest.raises(SystemExit, match="set public_metrics = true too"):
        _metrics_address(ControllerSection(metrics_listen="127.0.0.1:9464"))
    with pytest.raises(SystemExit, match="metrics_listen must be HOST:PORT"):
        _metrics_address(ControllerSection(metrics_listen="9464", public_metrics=True))
    assert _metrics_address(ControllerSection(metrics_listen="127.0.0.1:9464", public_metrics=True)) == (
        "127.0.0.1", 9464)



def test_the_requests_waiting_on_the_controller_are_counted_until_they_are_answered(tmp_path: Path) -> None:
    """A `drover wait` for a job's end and a long poll for events count while they wait, and no
    longer once the controller stops (which answers them at once)."""
    async def scenario(controller: Controller) -> tuple[Samples, Samples, dict[str, int]]:
        service = controller.service
        (job,) = service.submit([JobSubmission(script="true\n", workdir="/tmp", hold=True)], "alice")  # never ends
        before = parsed((await controller.get("/metrics", 0))[2])[1]
        waiting = asyncio.ensure_future(service.wait_for_end(job, 60))
        polling = asyncio.ensure_future(service.wait_for_events(60, service.events_marker()))
        await controller.turn()
        during = parsed((await controller.get("/metrics", 0))[2])[1]
        service.stop_answering(Standby("the controller at X is shutting down; ask the active controller"))
        for answered in (waiting, polling):
            with pytest.raises(Standby):
                await answered
        return before, during, service.shell.requests_waiting()

    before, during, after = run(tmp_path, Settings(), scenario)
    assert value(before, "drover_requests_waiting", waiting_for="job_end") == 0
    assert value(before, "drover_requests_waiting", waiting_for="events") == 0
    assert value(during, "drover_requests_waiting", waiting_for="job_end") == 1
    assert value(during, "drover_requests_waiting", waiting_for="events") == 1
    assert after == {"job_end": 0, "events": 0}
