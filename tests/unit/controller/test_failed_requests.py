"""A request whose handler or commit fails leaves the working set as the store has it, by
restoring only the jobs it named or was adding: no full reload, no node sent away."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from drover.controller.service import ControllerService, Settings
from drover.core.job_state import JobState
from drover.protocol.api import JobSubmission
from drover.store.base import Changes
from drover.store.sqlite import SqliteStore


def anyone(owner: str, job_id: int, verb: str) -> None:
    """The caller may touch every job (an admin)."""


class FailingStore(SqliteStore):
    """A real store whose next commit fails, as a full disk or an overflow would."""

    fail_next = False

    def commit(self, changes: Changes) -> None:
        if self.fail_next:
            self.fail_next = False
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        super().commit(changes)


def in_loop(action: Callable[[], Any]) -> Any:
    async def run() -> Any:
        return action()

    return asyncio.run(run())


@pytest.fixture
def service(tmp_path: Path) -> ControllerService:
    return in_loop(lambda: ControllerService(FailingStore(str(tmp_path / "drover.db")), Settings()))


def held(script: str = "true\n") -> JobSubmission:
    return JobSubmission(script=script, workdir="/tmp", hold=True)


def snapshot(service: ControllerService) -> object:
    state = service.state
    return (state.next_job_id, {job_id: (job.fresh_state, job.ended_at, dict(job.tasks), job.priority)
                                for job_id, job in state.jobs.items()})


def test_a_failed_submission_leaves_no_job_behind(service: ControllerService, caplog: pytest.LogCaptureFixture) -> None:
    (first,) = in_loop(lambda: service.submit([held()], "alice"))
    before, state = snapshot(service), service.state
    service.store.fail_next = True  # type: ignore[attr-defined]
    with caplog.at_level(logging.INFO), pytest.raises(OverflowError):
        in_loop(lambda: service.submit([held(), held()], "alice"))
    assert service.state is state and snapshot(service) == before
    assert "restored from the store" in caplog.text and "reloading the working set" not in caplog.text
    (second,) = in_loop(lambda: service.submit([held()], "alice"))
    assert second == first + 1  # the failed request's ids were never used


def test_a_failed_action_leaves_its_jobs_as_the_store_has_them(service: ControllerService,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    job, other = in_loop(lambda: service.submit([held(), held()], "alice"))
    in_loop(lambda: service.act("release", [str(other)], anyone))
    before, state = snapshot(service), service.state
    service.store.fail_next = True  # type: ignore[attr-defined]
    with caplog.at_level(logging.INFO), pytest.raises(OverflowError):
        in_loop(lambda: service.act("cancel", [str(job), f"{job}.0", "12x"], anyone))
    assert service.state is state and snapshot(service) == before
    assert service.state.jobs[job].fresh_state is JobState.HELD and job not in service.state.ended_states
    assert "reloading the working set" not in caplog.text
    results = in_loop(lambda: service.act("cancel", [str(job)], anyone))
    assert results[0].ok and job not in service.state.jobs


def test_a_bad_priority_is_refused_before_any_job_changes(service: ControllerService) -> None:
    (job,) = in_loop(lambda: service.submit([held()], "alice"))
    (result,) = in_loop(lambda: service.act("alter", [str(job)], anyone, priority=99999999999999999999))
    assert not result.ok and "priority must be between -1023 and 1023" in result.message
    assert service.state.jobs[job].priority == 0


def test_a_submission_sent_again_with_its_key_gets_the_first_ids_and_no_second_job(service: ControllerService) -> None:
    first = in_loop(lambda: service.submit([held(), held()], "alice", "k-0123456789"))
    again = in_loop(lambda: service.submit([held(), held()], "alice", "k-0123456789"))
    assert again == first and len(service.state.jobs) == 2
    # A key is its owner's: the same key from someone else is another submission.
    other = in_loop(lambda: service.submit([held()], "bob", "k-0123456789"))
    assert other != first[:1] and len(service.state.jobs) == 3
