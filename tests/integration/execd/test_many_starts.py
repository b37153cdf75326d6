"""Many jobs starting at once are all reported started: the shepherds' "started" hints are
datagrams, and a burst of them overflows the socket's queue (10 by default), so the node also
looks at the records itself."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.helpers.cluster import LocalCluster, serve
from tests.helpers.wait import wait_until


@pytest.fixture
def wide(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    yield from serve(request, LocalCluster(cpus=40))


def test_forty_jobs_started_together_all_show_as_running(wide: LocalCluster) -> None:
    lines = wide.workdir / "lines"
    lines.write_text("sleep 30\n" * 40)
    wide.drover("submit", "--each-line", str(lines), "-o", "/dev/null")

    def states() -> list[str]:
        return [job["state"] for job in wide.drover_json("status")]

    wait_until(lambda: states() == ["running"] * 40, timeout=30, describe="all 40 jobs to show as running")
    started = [event for event in wide.client().events(limit=1000) if event.kind == "started"]
    assert len(started) == 40
    wide.drover("cancel", *(str(job["id"]) for job in wide.drover_json("status")))
