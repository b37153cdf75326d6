"""Global fixtures: a real cluster per test that asks for one, and a guard against leaks; for
the shared machine, Drover installed for all users, a shared cluster started from that install,
real users, and `run_as` to run the installed commands as them."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from hypothesis import settings

from tests.helpers.browser import browser  # noqa: F401 (a fixture: a headless Chromium)
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.controller_world import world  # noqa: F401 (a fixture: the controller's handlers on a store)
from tests.helpers.leftovers import kill_all, left_behind
from tests.helpers.postgres import postgres_server, postgres_url, store_url  # noqa: F401 (fixtures)
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.system_install import InstallUnavailable, SystemInstall

# The property tests check what is true, not how fast: no per-example deadline (hypothesis's
# default, 200 ms, is a timed test on a loaded 2-core machine; speed is measured in bench/).
settings.register_profile("drover", deadline=None)
settings.load_profile("drover")


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """A controller and an execd with 2 CPUs, started as users start them."""
    yield from serve(request, LocalCluster())


@pytest.fixture
def users() -> Iterator[tuple[str, str]]:
    """Two local users made for the test, removed afterwards (root only; skips otherwise)."""
    import uuid

    from tests.helpers.users import can_manage_users, create_user, remove_user

    why_not = can_manage_users()
    if why_not:
        pytest.skip(why_not)
    names = (f"drva{uuid.uuid4().hex[:6]}", f"drvb{uuid.uuid4().hex[:6]}")
    for name in names:
        create_user(name)
    yield names
    for name in names:
        remove_user(name)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the process that starts the run (and its workers)
        from tests.helpers import run_wide

        run_wide.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In each worker as in the process that started the run (a worker never unconfigures)."""
    from tests.helpers import run_wide
    from tests.helpers.attempt_config import CLUSTER

    run_wide.remove_own_cgroups(CLUSTER)  # this process's hand-made attempts' parent cgroups


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # every worker is done by now
        from tests.helpers import run_wide

        run_wide.finish()


@pytest.fixture(scope="session")
def system_install(request: pytest.FixtureRequest) -> SystemInstall:
    """Drover installed by scripts/install-system.sh (as `make install-system` does) into a
    temporary prefix every user can execute; once per test run, shared by its workers and removed
    at its end (tests/helpers/run_wide.py). Skips, saying why, where it cannot be made (not
    root, no python3-venv, no package index)."""
    from tests.helpers import run_wide

    try:
        installed, made_here = run_wide.system_install()
    except InstallUnavailable as why:
        pytest.skip(f"cannot install Drover for all users: {why}")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if made_here and capture is not None and reporter is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"\ninstalled Drover for all users in {installed.prefix} ({installed.seconds:.1f}s)")
    return installed


@pytest.fixture
def system_cluster_factory(system_install: SystemInstall,
                           request: pytest.FixtureRequest) -> Iterator[Callable[..., SystemCluster]]:
    """Start shared clusters the way docs/shared-machine.md says (`drover up --system`, as root, from the install),
    each in a temporary state directory: `factory(config_toml="", cpus=2, kill_grace_s=1.0)`.
    Every one is stopped and removed after the test."""
    from tests.helpers.users import can_manage_users

    why_not = can_manage_users()
    if why_not:
        pytest.skip(why_not)
    started: list[SystemCluster] = []

    def factory(config_toml: str = "", cpus: int = 2, kill_grace_s: float = 1.0) -> SystemCluster:
        shared = SystemCluster(system_install, config_toml=config_toml, cpus=cpus, kill_grace_s=kill_grace_s)
        started.append(shared)
        return shared.start()

    yield factory
    report = getattr(request.node, "rep_call", None)
    problems = []
    for shared in started:
        if report is not None and report.failed:
            print(shared.logs())
        problems += shared.stop()
    assert not problems, "; ".join(problems)


@pytest.fixture
def unstarted_system_cluster(system_install: SystemInstall) -> Iterator[SystemCluster]:
    """A shared cluster not started yet: the test starts it its own way (`start(prefix, env)`);
    stopped and removed after."""
    from tests.helpers.users import can_manage_users

    why_not = can_manage_users()
    if why_not:
        pytest.skip(why_not)
    made = SystemCluster(system_install)
    yield made
    problems = made.stop()
    assert not problems, "; ".join(problems)


@pytest.fixture
def system_cluster(system_cluster_factory: Callable[..., SystemCluster]) -> SystemCluster:
    """A shared cluster with the defaults (2 CPUs, 1 s kill grace); see system_cluster_factory."""
    return system_cluster_factory()


@pytest.fixture
def run_as(system_cluster: SystemCluster) -> Callable[..., object]:
    """`run_as(user, *argv, input=None, cwd=None, env=None)`: the installed command `argv[0]`
    run as `user` against `system_cluster` (see SystemCluster.run_as)."""
    return system_cluster.run_as


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    """After each test, no process the test started may be left."""
    yield
    found = left_behind()
    if found:
        pytest.fail(f"the test left processes behind: {kill_all(found)}")
