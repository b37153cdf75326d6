"""Global fixtures: a real cluster per test that asks for one, and a guard against leaks."""

from __future__ import annotations

from collections.abc import Iterator

import psutil
import pytest

from tests.helpers.cluster import LocalCluster


@pytest.fixture
def cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """A controller and an execd with 2 CPUs, started as users start them."""
    local = LocalCluster()
    try:
        local.start()
    except BaseException:
        print(local.logs())
        local.stop()
        raise
    yield local
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(local.logs())
    problems = local.stop()
    assert not problems, "; ".join(problems)


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


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    """After each test, no process the test started may be left."""
    yield
    me = psutil.Process()
    alive = [p for p in me.children(recursive=True) if p.status() != psutil.STATUS_ZOMBIE]
    if alive:
        for process in alive:
            process.kill()
        pytest.fail(f"the test left processes behind: {[(p.pid, p.name()) for p in alive]}")
