"""Jobs as the API returns them, built on plain data for the Slurm front ends' format tests:
a running job, a pending array with one task running and one ended, a job that failed by a
signal, a cancelled one, one past its limit. Times are fixed; the tests run in UTC."""

from __future__ import annotations

from drover.protocol.api import AttemptInfo, DependencyOn, JobInfo, TaskInfo, Usage

T0 = 1_700_000_000.0  # 2023-11-14T22:13:20 UTC
NOW = T0 + 3 * 3600 + 75


def job(**fields: object) -> JobInfo:
    base: dict[str, object] = dict(
        id=42, name="train", owner="root", state="running", queue="default", submitted_at=T0, priority=7,
        cpus=2, memory_mib=4096, time_limit_s=3600, array=None, task_counts={"running": 1}, workdir="/w",
        output="/w/slurm-%j.out", error=None)
    base.update(fields)
    return JobInfo(**base)


def attempt(number: int = 1, node: str = "n1", start: float = T0 + 10, end: float | None = None,
            code: int | None = None, signal: int | None = None, usage: Usage | None = None) -> AttemptInfo:
    return AttemptInfo(number=number, node=node, cpu_ids=[0, 1], dispatched_at=start - 1, started_at=start,
                       ended_at=end, exit_code=code, signal=signal, usage=usage)


USAGE = Usage(user_cpu_s=61.5, sys_cpu_s=0.25, max_rss_kib=4356, major_faults=3)

RUNNING = job(tasks=[TaskInfo(index=0, state="running", state_since=T0 + 10, stdout="/w/slurm-42.out",
                              attempts=[attempt()])])
ARRAY = job(id=50, name="sweep", state="running", array="1-6", max_running=2,
            task_counts={"completed": 1, "running": 1, "pending": 4},
            tasks=[TaskInfo(index=1, state="completed", state_since=T0 + 70, exit_status=0,
                            stdout="/w/slurm-50_1.out",
                            attempts=[attempt(end=T0 + 70, code=0, usage=USAGE)]),
                   TaskInfo(index=2, state="running", state_since=T0 + 71, stdout="/w/slurm-50_2.out",
                            attempts=[attempt(start=T0 + 71)])],
            pending_reason="array_limit")
KILLED = job(id=43, name="a-very-long-job-name", state="failed", task_counts={"failed": 1},
             ended_at=T0 + 130, exit_status=137, time_limit_s=None, memory_mib=1000,
             tasks=[TaskInfo(index=0, state="failed", state_since=T0 + 130, exit_status=137,
                             stdout="/w/slurm-43.out",
                             attempts=[attempt(start=T0 + 10, end=T0 + 130, signal=9, usage=USAGE)])])
CANCELLED = job(id=44, name="stopped", state="cancelled", task_counts={"cancelled": 1}, ended_at=T0 + 40,
                tasks=[TaskInfo(index=0, state="cancelled", state_since=T0 + 40, stdout="/w/slurm-44.out",
                                attempts=[attempt(end=T0 + 40, signal=15)])])
TIMED_OUT = job(id=45, name="slow", state="timeout", task_counts={"timeout": 1}, ended_at=T0 + 3610,
                time_limit_s=3600,
                tasks=[TaskInfo(index=0, state="timeout", state_since=T0 + 3610, stdout="/w/slurm-45.out",
                                attempts=[attempt(end=T0 + 3610, signal=15, usage=USAGE)])])
HELD = job(id=46, name="later", state="held", task_counts={"held": 1}, dependencies=[DependencyOn(kind="afterok", job=42)],
           pending_reason="dependency", tasks=[TaskInfo(index=0, state="held", state_since=T0)])
ALL = [RUNNING, ARRAY, KILLED, CANCELLED, TIMED_OUT, HELD]
