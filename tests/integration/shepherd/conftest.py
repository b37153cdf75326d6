"""Fixtures of the shepherd's tests."""

from __future__ import annotations

import pytest
from tests.helpers.attempts import BACKENDS, backend_unusable


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each containment backend (cgroup v2, v1, the subreaper), for a test run once with each;
    those this host cannot run skip, saying why."""
    why_not = backend_unusable(request.param)
    if why_not:
        pytest.skip(why_not)
    return str(request.param)
