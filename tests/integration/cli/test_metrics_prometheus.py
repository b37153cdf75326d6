"""A real Prometheus scrapes a real controller's /metrics (on `[controller] metrics_listen`,
plain HTTP on loopback), and a PromQL query through its HTTP API answers what `drover status
--json` says."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.prometheus import PrivateServer, free_port, prometheus_binary
from tests.helpers.wait import wait_until


@pytest.fixture
def metrics_port() -> int:
    return free_port()


@pytest.fixture
def open_cluster(request: pytest.FixtureRequest, metrics_port: int) -> Iterator[LocalCluster]:
    config = f'[controller]\npublic_metrics = true\nmetrics_listen = "127.0.0.1:{metrics_port}"\n'
    yield from serve(request, LocalCluster(cpus=2, config_toml=config))


@pytest.fixture
def prometheus(open_cluster: LocalCluster, metrics_port: int) -> Iterator[PrivateServer]:
    server = PrivateServer(prometheus_binary(), f"127.0.0.1:{metrics_port}")
    yield server
    server.stop()


def _count(jobs: list[dict[str, object]], state: str) -> int:
    return sum(1 for job in jobs if job["state"] == state)


def _value(result: list[dict[str, object]]) -> float:
    assert len(result) == 1, result
    sample = result[0]["value"]
    assert isinstance(sample, list)
    return float(sample[1])


def test_prometheus_scrapes_the_controller_and_promql_agrees_with_drover_status(
        open_cluster: LocalCluster, prometheus: PrivateServer) -> None:
    for _ in range(3):  # two CPUs: two run, one waits
        open_cluster.submit("--", "sleep", "300")
    wait_until(lambda: _count(open_cluster.drover_json("status"), "running") == 2, timeout=30,
               describe="two jobs running")
    settled = time.time()
    jobs = open_cluster.drover_json("status")
    assert (_count(jobs, "running"), _count(jobs, "pending")) == (2, 1)

    # A scrape after the jobs settled (the samples' own time, as Prometheus stored them).
    wait_until(lambda: _value(prometheus.query("max(timestamp(drover_jobs))")) > settled + 0.5, timeout=60,
               describe="a scrape after the jobs settled")
    target = prometheus.targets()[0]
    assert target["health"] == "up", target

    running = _value(prometheus.query('sum(drover_jobs{state="running"})'))
    pending = _value(prometheus.query('sum(drover_jobs{state="pending"})'))
    cpus = _value(prometheus.query('sum(drover_node_cpus_allocated)'))
    jobs = open_cluster.drover_json("status")
    assert running == _count(jobs, "running") == 2
    assert pending == _count(jobs, "pending") == 1
    assert cpus == sum(job["cpus"] for job in jobs if job["state"] == "running")
    assert _value(prometheus.query("drover_attempts_started_total")) == 2
    # The counters reached Prometheus as counters, their histograms as histograms.
    wait_until(lambda: _value(prometheus.query("count_over_time(drover_store_commits_total[1m])")) >= 2,
               timeout=30, describe="two scrapes of the commits")
    assert _value(prometheus.query("rate(drover_store_commits_total[1m])")) >= 0
    quantile = _value(prometheus.query("histogram_quantile(0.99, drover_store_commit_duration_seconds_bucket)"))
    assert 0 < quantile <= 2.5


def test_anyone_on_the_metrics_listener_reaches_metrics_and_nothing_else(open_cluster: LocalCluster,
                                                                          metrics_port: int) -> None:
    """The plain-HTTP listener answers anyone who reaches it, with no authentication: it must
    serve GET /metrics and refuse every other path and method, the API's included (a peer there
    must not list jobs, join a node, shut the controller down, or open a WebSocket)."""
    import http.client

    job = open_cluster.submit("--", "true")

    def ask(method: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=10)
        try:
            connection.request(method, path, body=b"{}" if method == "POST" else None, headers=headers or {})
            reply = connection.getresponse()
            return reply.status, reply.read()
        finally:
            connection.close()

    status, body = ask("GET", "/metrics")
    assert status == 200 and b"drover_jobs" in body
    for path in ("/v1/jobs", f"/v1/jobs/{job}", "/v1/ping", "/v1/cluster/ca", "/openapi.json", "/",
                 "/metrics/../v1/jobs", "//metrics", "/metrics/"):
        status, body = ask("GET", path)
        assert status == 404 and b"serves /metrics only" in body, (path, status, body)
    for method, path in (("POST", "/metrics"), ("POST", "/v1/shutdown"), ("POST", "/v1/cluster/join"),
                         ("DELETE", f"/v1/jobs/{job}"), ("PUT", "/metrics")):
        status, _ = ask(method, path)
        assert status in (404, 405), (method, path, status)
    upgrade = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    status, _ = ask("GET", "/v1/events/stream", upgrade)
    assert status != 101
    assert open_cluster.drover_json("show", str(job))["state"] in ("pending", "dispatched", "running", "completed")
    assert open_cluster.drover("status").returncode == 0  # the controller still serves its API
