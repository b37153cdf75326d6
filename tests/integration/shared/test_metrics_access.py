"""Who reads a shared cluster's metrics (GET /metrics), as real users on its socket: root and
the operators always; any other user only where `[controller] public_metrics` is on, and
otherwise a 403 that says so."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.users import create_user, remove_user


@pytest.fixture
def operator(users: tuple[str, str]) -> Iterator[str]:
    name = f"drvo{uuid.uuid4().hex[:6]}"
    create_user(name)
    yield name
    remove_user(name)


def scrape(cluster: SystemCluster, user: str) -> tuple[int, str]:
    """GET /metrics on the cluster's socket as `user`: the status and the body."""
    result = cluster.run_as(user, "curl", "-s", "--unix-socket", cluster.socket, "-H",
                            "Accept: application/openmetrics-text; version=1.0.0", "-w", "\n%{http_code}",
                            "http://controller/metrics")
    assert result.returncode == 0, result.stderr
    body, _, status = result.stdout.rpartition("\n")
    return int(status), body


def test_only_operators_read_the_metrics_unless_they_are_public(
        system_cluster_factory: Callable[..., SystemCluster], users: tuple[str, str], operator: str) -> None:
    alice, _ = users
    closed = system_cluster_factory(config_toml=f'[controller]\noperators = ["{operator}"]\n')
    status, body = scrape(closed, alice)
    assert status == 403, body
    assert "only root and the cluster's operators read the controller's metrics" in body
    assert "public_metrics = true" in body
    status, body = scrape(closed, operator)
    assert status == 200 and body.endswith("# EOF\n"), body[-200:]
    assert "# TYPE drover_jobs gauge" in body

    public = system_cluster_factory(config_toml="[controller]\npublic_metrics = true\n")
    status, body = scrape(public, alice)
    assert status == 200 and "# TYPE drover_store_commits counter" in body, body[-200:]
