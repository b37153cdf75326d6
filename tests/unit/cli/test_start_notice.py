"""What an attached command says while its job waits and once it starts (cli/start_notice.py),
on plain wait replies and a clock the test moves."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from drover.cli.start_notice import DROVER, PATIENCE_S, StartNotice, slurm
from drover.protocol.api import AttemptInfo, JobInfo, TaskInfo


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def reply(state: str = "pending", node: str | None = None, ended: bool = False, **fields: Any) -> Any:
    attempts = [AttemptInfo(number=1, node=node, cpu_ids=[0], dispatched_at=1.0, started_at=None, ended_at=None,
                            exit_code=None, signal=None, failure=None, timed_out=False, terminated=False,
                            usage=None)] if node else []
    base: dict[str, Any] = dict(id=12, name="x", owner="alice", state=state, submitted_at=0.0, priority=0, cpus=1,
                                memory_mib=0, time_limit_s=None, array=None, task_counts={state: 1}, workdir="/w",
                                output="o", error=None, tasks=[TaskInfo(index=0, state=state, state_since=0.0, attempts=attempts)])
    base.update(fields)
    return {"ended": ended, "job": msgspec.to_builtins(JobInfo(**base))}


WAITING = dict(pending_reason="resources", pending_explanation="waiting for CPUs or memory to free up")


def test_a_job_that_waits_is_said_to_wait_with_its_reason_then_where_it_started(capsys: pytest.CaptureFixture[str]
                                                                                ) -> None:
    clock = Clock()
    notice = StartNotice(DROVER, 12, clock)
    notice.see(reply(**WAITING))
    assert capsys.readouterr().err == ""  # not yet: it may start at once
    clock.now += PATIENCE_S
    notice.see(reply(**WAITING))
    notice.see(reply(**WAITING))
    assert capsys.readouterr().err == (
        "drover: job 12 queued and waiting for resources (waiting for CPUs or memory to free up)\n")
    notice.see(reply("running", node="vm"))
    notice.see(reply("running", node="vm"))
    assert capsys.readouterr().err == "drover: job 12 started on node vm\n"


def test_a_job_that_starts_at_once_is_not_said_to_wait(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    notice = StartNotice(DROVER, 12, clock)
    notice.see(reply())
    notice.see(reply("running", node="vm"))
    clock.now += 10
    notice.see(reply("completed", node="vm", ended=True))
    assert capsys.readouterr().err == "drover: job 12 started on node vm\n"


def test_srun_says_it_was_allocated_only_after_it_said_it_waited(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    at_once = StartNotice(slurm("srun"), 7, clock)
    at_once.see(reply("running", node="vm"))
    assert capsys.readouterr().err == ""
    waited = StartNotice(slurm("srun"), 7, clock)
    clock.now += 1
    waited.see(reply(**WAITING))
    waited.see(reply("running", node="vm"))
    assert capsys.readouterr().err == ("srun: job 7 queued and waiting for resources\n"
                                       "srun: job 7 has been allocated resources\n")


def test_salloc_says_its_allocation_is_pending_first(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    notice = StartNotice(slurm("salloc"), 7, clock)
    clock.now += 1
    notice.see(reply(**WAITING))
    assert capsys.readouterr().err == ("salloc: Pending job allocation 7\n"
                                       "salloc: job 7 queued and waiting for resources\n")


def test_an_unplanned_job_and_a_held_one_say_so(capsys: pytest.CaptureFixture[str]) -> None:
    clock = Clock()
    unplanned, held = StartNotice(DROVER, 12, clock), StartNotice(DROVER, 12, clock)
    clock.now += 1
    unplanned.see(reply())
    held.see(reply("held"))
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("drover: job 12 queued and waiting for resources (not planned yet"), lines
    assert lines[1] == ("drover: job 12 queued and waiting for resources "
                        "(held (release with drover release 12; drover why 12 says why))"), lines


def test_quiet_says_nothing_and_a_job_cancelled_while_queued_says_no_start(capsys: pytest.CaptureFixture[str]
                                                                           ) -> None:
    clock = Clock()
    quiet, cancelled = StartNotice(None, 12, clock), StartNotice(DROVER, 12, clock)
    clock.now += 1
    quiet.see(reply(**WAITING))
    quiet.see(reply("running", node="vm"))
    assert capsys.readouterr().err == ""
    cancelled.see(reply("cancelled", ended=True))
    assert capsys.readouterr().err == ""
