"""PBS's job states and exit statuses, from Drover's tasks and attempts, and the resources
qstat -f says they used, on plain data."""

from __future__ import annotations

from drover.compat.pbs.common import exit_status, job_state, subjob_state, subjobs
from drover.core import views
from drover.protocol.api import AttemptInfo, JobInfo, TaskInfo


def attempt(**fields: object) -> AttemptInfo:
    return AttemptInfo(number=1, node="n1", cpu_ids=[0], dispatched_at=1.0, **fields)  # type: ignore[arg-type]


def task(state: str, *attempts: AttemptInfo, index: int = 0) -> TaskInfo:
    return TaskInfo(index=index, state=state, state_since=1.0, attempts=list(attempts))


def test_exit_status_as_pbs_pro_reports_it() -> None:
    assert exit_status(task("completed", attempt(started_at=2.0, exit_code=0))) == 0
    assert exit_status(task("failed", attempt(started_at=2.0, exit_code=3))) == 3
    assert exit_status(task("failed", attempt(started_at=2.0, signal=11))) == 256 + 11
    assert exit_status(task("timeout", attempt(started_at=2.0, signal=9, timed_out=True))) == 256 + 15
    assert exit_status(task("cancelled", attempt(started_at=2.0, signal=15))) == 256 + 9
    assert exit_status(task("failed", attempt(failure="no such user"))) == -1
    assert exit_status(task("cancelled")) is None  # deleted before it ran


def job(array: str | None, counts: dict[str, int], tasks: list[TaskInfo] | None = None) -> JobInfo:
    return JobInfo(id=12, name="j", owner="u", state=views.job_state(counts), submitted_at=1.0, priority=0, cpus=1,
                   memory_mib=0, time_limit_s=None, array=array, task_counts=counts, workdir="/", output="o",
                   error=None, tasks=tasks or [])


def test_array_states_begun_finished_and_expired_subjobs() -> None:
    assert job_state(job(None, {"held": 1})) == "H"
    assert job_state(job("1-3:1", {"pending": 3})) == "Q"
    assert job_state(job("1-3:1", {"held": 3})) == "H"
    assert job_state(job("1-3:1", {"completed": 1, "pending": 2})) == "B"
    assert job_state(job("1-3:1", {"completed": 2, "failed": 1})) == "F"
    assert subjob_state(task("failed", index=2)) == "X" and subjob_state(task("running", index=2)) == "R"


def test_subjobs_not_yet_dispatched_are_listed_queued_or_held() -> None:
    ran = task("running", attempt(started_at=2.0), index=3)
    listed = subjobs(job("1-5:2", {"running": 1, "held": 2}, [ran]))
    assert [(t.index, t.state) for t in listed] == [(1, "held"), (3, "running"), (5, "held")]


def test_resources_used_leave_out_a_memory_not_known() -> None:
    """A max RSS of 0 is not known (accounting.md, Max RSS): no mem or vmem of 0kb."""
    from drover.compat.pbs.attributes import attributes
    from drover.protocol.api import Usage

    def used(max_rss_kib: int) -> dict[str, object]:
        usage = Usage(user_cpu_s=1.0, sys_cpu_s=0.0, max_rss_kib=max_rss_kib, wall_s=1.0)
        ended = attempt(started_at=2.0, ended_at=3.0, exit_code=0, usage=usage)
        resources: dict[str, object] = attributes(job(None, {"completed": 1}, [task("completed", ended)]), 4.0)[
            "resources_used"]
        return resources

    assert list(used(2048)) == ["cpupercent", "cput", "mem", "ncpus", "vmem", "walltime"]
    assert (used(2048)["mem"], used(2048)["vmem"]) == ("2048kb", "2048kb")
    assert list(used(0)) == ["cpupercent", "cput", "ncpus", "walltime"]
