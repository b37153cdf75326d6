"""Hosts in network namespaces (tests/helpers/netns.py): a controller alone on "ctl", and a node
host "node1" that has not joined yet. Skipped, saying why, where namespaces cannot be made."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.helpers.netns import Hosts, why_not_available


@pytest.fixture
def hosts(request: pytest.FixtureRequest) -> Iterator[Hosts]:
    why_not = why_not_available()
    if why_not:
        pytest.skip(why_not)
    with Hosts() as made:
        made.add_node("node1")
        try:
            made.start_controller()
        except BaseException:
            print(made.logs())
            raise
        yield made
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print(made.logs())
