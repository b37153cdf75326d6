"""A promised task, as its user sees it: waiting. The controller's reads (a job with its tasks,
a listing's entry, the metrics) show it pending with the reason `promised`, and every front end
shows what it builds from them as a job that has not started: squeue PD (Promised), Grid
Engine qw, PBS Q, LSF PEND, HTCondor Idle; `drover why` says what it waits for. Once its node starts it, it runs, as any job."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.helpers.controller_world import World, world  # noqa: F401  (a fixture)
from tests.unit.controller.test_promised_attempts import one_cpu_busy

from drover.cli.why import explain
from drover.compat.gridengine.qstat_view import rows as ge_rows
from drover.compat.htcondor.common import IDLE, RUNNING
from drover.compat.htcondor.jobads import ad
from drover.compat.lsf.fields import rows as lsf_rows
from drover.compat.pbs.attributes import attributes as job_attributes
from drover.compat.pbs.common import job_state as pbs_state
from drover.compat.slurm.jobs import slurm_jobs
from drover.controller.reads import promised_view, views
from drover.controller.reads.metrics import _jobs
from drover.core.job_state import JobState
from drover.protocol.api import JobInfo


def shown(world: World, job_id: int) -> JobInfo:  # noqa: F811
    return views.job_info(world.state, world.state.jobs[job_id], with_tasks=True, store=world.store)


def metrics(world: World) -> dict[str, Any]:  # noqa: F811
    return _jobs(SimpleNamespace(state=world.state, in_doubt=set()))  # type: ignore[arg-type]


def test_a_promised_task_shows_as_pending_with_the_reason_promised(world: World) -> None:  # noqa: F811
    running, promised, jobs = one_cpu_busy(world)
    assert world.state.jobs[jobs[1]].tasks[0].state is JobState.DISPATCHED  # the stored state is kept
    info = shown(world, jobs[1])
    assert info.state == "pending" and info.task_counts == {"pending": 1}
    assert info.pending_reason == "promised"
    assert info.pending_explanation == f"promised: starts on n1 the moment attempt {running} ends there"
    (task,) = info.tasks
    assert task.state == "pending" and task.attempts[-1].after == running
    assert shown(world, jobs[0]).state == "running"  # the one it follows runs
    why = explain(info)  # drover why
    assert why[1:3] == ["pending:", f"  promised: starts on n1 the moment attempt {running} ends there"], why
    assert not any("running or starting" in line for line in why), why


def test_a_listing_and_the_metrics_count_a_promised_task_as_waiting(world: World) -> None:  # noqa: F811
    running, promised, jobs = one_cpu_busy(world)
    job = world.state.jobs[jobs[1]]
    assert promised_view.shown_task_counts(world.state, job) == {"pending": 1}
    assert promised_view.shown_reason(world.state, job) is not None
    found = metrics(world)
    assert found["drover_tasks"] == {("running", "default", "alice"): 1, ("pending", "default", "alice"): 3}
    assert found["drover_jobs"] == {("running", "default", "alice"): 1, ("pending", "default", "alice"): 3}
    assert found["drover_jobs_pending"][("promised",)] == 1
    assert ("dispatched", "default", "alice") not in found["drover_tasks"]


def test_every_front_end_shows_a_promised_job_waiting_then_running_once_it_starts(world: World) -> None:  # noqa: F811
    running, promised, jobs = one_cpu_busy(world)
    info = shown(world, jobs[1])
    (line,) = slurm_jobs(info, world.now)
    assert (line.compact_state, line.reason, line.node) == ("PD", "Promised", "")
    (row,) = ge_rows(info)
    assert (row.state, row.node) == ("qw", "")
    assert pbs_state(info) == "Q"
    assert "exec_host" not in job_attributes(info, world.now)
    assert job_attributes(info, world.now)["comment"].startswith("Not Running: promised: starts on n1")
    (lsf,) = lsf_rows(info)
    assert lsf.state == "PEND" and lsf.hosts() == []
    condor = ad(info, info.tasks[0])
    assert condor["JobStatus"] == IDLE and "RemoteHost" not in condor and "LastRemoteHost" not in condor

    world.started(promised.attempt)  # its node starts it the moment the first one's shepherd is gone
    world.exited(running)
    info = shown(world, jobs[1])
    assert info.state == "running" and info.task_counts == {"running": 1} and info.pending_reason is None
    (line,) = slurm_jobs(info, world.now)
    assert (line.compact_state, line.node) == ("R", "n1")
    (row,) = ge_rows(info)
    assert row.state == "r"
    assert pbs_state(info) == "R"
    (lsf,) = lsf_rows(info)
    assert lsf.state == "RUN"
    assert ad(info, info.tasks[0])["JobStatus"] == RUNNING


def test_a_dispatched_task_that_follows_no_one_is_shown_as_before(world: World) -> None:  # noqa: F811
    world.connect(cpus=1)
    (job,) = world.submit()
    world.schedule()
    info = shown(world, job)
    assert info.state == "dispatched" and info.tasks[0].state == "dispatched" and info.pending_reason is None


def test_a_cancel_of_a_promised_task_says_it_is_taken_back_not_that_it_runs(world: World) -> None:  # noqa: F811
    running, promised, jobs = one_cpu_busy(world)
    (result,) = world.act("cancel", str(jobs[1]))
    assert result.message == "1 promised taken back, cancelled once its node says so"  # type: ignore[attr-defined]
    (result,) = world.act("cancel", str(jobs[0]))
    assert result.message == "1 running asked to stop"  # type: ignore[attr-defined]
