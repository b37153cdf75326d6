"""Fixtures for driving the front ends with real workflow tools: each tool installed once per
session into its own cached virtual environment (skipping, with pip's reason, where it cannot be),
and the front ends installed into a cluster's directory with `drover compat install`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.helpers import workflow_tools
from tests.helpers.cluster import LocalCluster
from tests.helpers.wait import wait_until


def _tool(name: str, request: pytest.FixtureRequest) -> workflow_tools.ToolEnv:
    try:
        env = workflow_tools.install(name)
    except workflow_tools.ToolUnavailable as why:
        pytest.skip(f"cannot install {name}: {why}")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if capture is not None and reporter is not None:
        with capture.global_and_fixture_disabled():
            how = f"installed in {env.install_seconds:.1f}s" if env.install_seconds else "reused"
            reporter.write_line(f"\n{name}: {' '.join(workflow_tools.PINS[name])} {how} ({env.prefix})")
    return env


@pytest.fixture(scope="session")
def submitit_env(request: pytest.FixtureRequest) -> workflow_tools.ToolEnv:
    return _tool("submitit", request)


@pytest.fixture(scope="session")
def dask_env(request: pytest.FixtureRequest) -> workflow_tools.ToolEnv:
    return _tool("dask-jobqueue", request)


@pytest.fixture(scope="session")
def parsl_env(request: pytest.FixtureRequest) -> workflow_tools.ToolEnv:
    return _tool("parsl", request)


@pytest.fixture(scope="session")
def psij_env(request: pytest.FixtureRequest) -> workflow_tools.ToolEnv:
    return _tool("psij-python", request)


@pytest.fixture(scope="session")
def snakemake_env(request: pytest.FixtureRequest) -> workflow_tools.ToolEnv:
    return _tool("snakemake", request)


@pytest.fixture(scope="session")
def htcondor_env(request: pytest.FixtureRequest) -> workflow_tools.ToolEnv:
    return _tool("htcondor", request)


@pytest.fixture
def htcondor_front_ends(cluster: LocalCluster) -> Path:
    """The directory `drover compat install` filled (HTCondor's commands with the others); the
    job event log's followers give up on a stopped cluster within seconds, not minutes."""
    cluster.env["DROVER_HTCONDOR_FOLLOW_GRACE_S"] = "3"
    bin_dir = cluster.root / "bin"
    cluster.drover("compat", "install", str(bin_dir))
    return bin_dir


@pytest.fixture
def front_ends(cluster: LocalCluster) -> Path:
    """The directory `drover compat install` filled with sbatch, qsub and the rest."""
    bin_dir = cluster.root / "bin"
    cluster.drover("compat", "install", str(bin_dir))
    return bin_dir


@pytest.fixture
def pbs_front_ends(cluster: LocalCluster) -> Path:
    """The directory `drover compat install --flavor pbs` filled with PBS's qsub, qstat, qdel..."""
    bin_dir = cluster.root / "bin-pbs"
    cluster.drover("compat", "install", "--flavor", "pbs", str(bin_dir))
    return bin_dir


@pytest.fixture
def nothing_left_running(cluster: LocalCluster) -> Callable[[], None]:
    """`check()` waits until the cluster has no pending or running job (what an interrupted
    tool submitted must have been cancelled) and fails naming the jobs that stay."""
    def check() -> None:
        def idle() -> bool:
            return not cluster.client().jobs()
        try:
            wait_until(idle, timeout=30, describe="every job the tool submitted to end")
        except AssertionError:
            left = [(job.id, job.name, job.state) for job in cluster.client().jobs()]
            raise AssertionError(f"jobs left pending or running after the tool was interrupted: {left}") from None
    return check


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """With pytest-xdist, these tests run one after another in one worker: a tool's stop removes
    the named semaphores its multiprocessing left in /dev/shm, which are not told apart from
    another tool's running at the same time."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.xdist_group("workflow-tools"))
