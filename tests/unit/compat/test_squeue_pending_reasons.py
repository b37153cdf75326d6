"""squeue's reason for a pending job is Slurm's word for why Drover's planner left it waiting,
never "(None)" for a reason the planner gives: a job no node that is up has the features or GPUs
of (held at submission to wait for such nodes, then released) shows BadConstraints."""

from __future__ import annotations

import pytest
from tests.unit.compat.slurm_fixtures import NOW, T0, job

from drover.compat.slurm.jobs import PENDING_REASONS, slurm_jobs
from drover.protocol.api import TaskInfo
from drover.scheduler.reasons import PendingReason


def pending(reason: str) -> str:
    info = job(id=60, state="pending", task_counts={"pending": 1}, pending_reason=reason,
               tasks=[TaskInfo(index=0, state="pending", state_since=T0)])
    (line,) = slurm_jobs(info, NOW)
    return line.reason


def test_a_job_no_node_matches_shows_bad_constraints() -> None:
    assert pending("no_node_matches") == "BadConstraints"


@pytest.mark.parametrize("reason", [r for r in PendingReason if r is not PendingReason.PLANNING_ERROR])
def test_every_reason_the_planner_gives_has_slurms_word(reason: PendingReason) -> None:
    assert reason.value in PENDING_REASONS
    assert pending(reason.value) not in ("None", "")
