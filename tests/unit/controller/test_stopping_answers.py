"""A controller that stops serving answers the requests waiting on it (a job's end, new events)
at once with the reason it stops, and every later request too: left waiting, they would be cut
off by the server's own shutdown with an error that tells the client nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from drover.controller.service import ControllerService, Settings
from drover.core.errors import Standby
from drover.protocol.api import JobSubmission
from drover.store.sqlite import SqliteStore

STOPPING = Standby("the controller at X is shutting down; ask the active controller")


def service(tmp_path: Path) -> tuple[ControllerService, int]:
    """A service with one job that waits (there is no node to run it)."""
    controller = ControllerService(SqliteStore(str(tmp_path / "drover.db")), Settings())
    (job,) = controller.submit([JobSubmission(script="true\n", workdir="/tmp")], "alice")
    return controller, job


def test_a_wait_for_a_jobs_end_is_answered_with_the_reason_once_the_controller_stops(tmp_path: Path) -> None:
    async def main() -> None:
        controller, job = service(tmp_path)
        waiting = asyncio.ensure_future(controller.wait_for_end(job, 60))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        controller.stop_answering(STOPPING)
        with pytest.raises(Standby, match="shutting down"):
            await asyncio.wait_for(waiting, 5)

    asyncio.run(main())


def test_a_wait_that_begins_after_the_stop_is_answered_at_once(tmp_path: Path) -> None:
    """A request let in before the stop, which reached its wait after it (its reads came first)."""
    async def main() -> None:
        controller, job = service(tmp_path)
        controller.stop_answering(STOPPING)
        with pytest.raises(Standby):
            await asyncio.wait_for(controller.wait_for_end(job, 60), 5)
        with pytest.raises(Standby):
            controller.ready_to_read()
        with pytest.raises(Standby):
            controller.ready()

    asyncio.run(main())


def test_a_long_poll_for_events_ends_with_the_reason_once_the_controller_stops(tmp_path: Path) -> None:
    async def main() -> None:
        controller, _ = service(tmp_path)
        polling = asyncio.ensure_future(controller.wait_for_events(60, controller.events_marker()))
        await asyncio.sleep(0.05)
        controller.stop_answering(STOPPING)
        with pytest.raises(Standby):
            await asyncio.wait_for(polling, 5)
        with pytest.raises(Standby):  # and at once for a poll that begins after
            await asyncio.wait_for(controller.wait_for_events(60, controller.events_marker()), 5)

    asyncio.run(main())
