"""qstat's table, -f, -xml and -j forms, against golden files laid out with the printf formats
of Grid Engine's qstat (qstat.c, qstat_xml.c, show_job.c), and qacct's record (qacct.c)."""

from __future__ import annotations

import os
import pathlib
import time

import pytest

from drover.compat.gridengine import qacct, qstat_detail, qstat_view
from drover.protocol.api import AttemptInfo, DependencyOn, JobInfo, NodeInfo, TaskInfo, Usage

GOLDEN = pathlib.Path(__file__).resolve().parents[2] / "data" / "gridengine"
T0 = 1795000000.0  # Mon Nov 16 2026, in UTC


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def a_job(job_id: int, name: str = "sleep", array: str | None = None, tasks: list[TaskInfo] | None = None,
          counts: dict[str, int] | None = None, **fields: object) -> JobInfo:
    defaults: dict[str, object] = dict(
        id=job_id, name=name, owner="alice", state="pending", submitted_at=T0 + job_id, priority=0, cpus=1,
        memory_mib=0, time_limit_s=None, array=array, task_counts=counts or {"pending": 1}, workdir="/home/alice",
        output="%x.o%j", error="%x.e%j", tasks=tasks or [])
    defaults.update(fields)
    return JobInfo(**defaults)  # type: ignore[arg-type]


def a_task(index: int, state: str, node: str = "node1", started: float = T0 + 100, **fields: object) -> TaskInfo:
    attempts = [AttemptInfo(number=1, node=node, cpu_ids=[0], dispatched_at=started, started_at=started,
                            **fields)]  # type: ignore[arg-type]
    return TaskInfo(index=index, state=state, state_since=started, attempts=attempts)


def jobs() -> list[JobInfo]:
    return [
        a_job(12, tasks=[a_task(0, "running")], counts={"running": 1}, state="running"),
        a_job(13, "sweep", array="1-10:1", tasks=[a_task(1, "running"), a_task(2, "running", node="node2")],
              counts={"running": 2, "pending": 8}, cpus=2),
        a_job(14, "held_one", counts={"held": 1}, state="held", priority=-10),
        a_job(15, "after", counts={"pending": 1}, pending_reason="dependency", dependencies=[DependencyOn(kind="afterok", job=12)]),
        a_job(16, "a_very_long_job_name", counts={"held": 1},
              tasks=[TaskInfo(index=0, state="held", state_since=T0, exit_status=100)], owner="bob_with_a_long_name"),
    ]


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("DROVER_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def test_the_plain_table() -> None:
    rows = [row for job in jobs() for row in qstat_view.rows(job)]
    golden("qstat.txt", qstat_view.table(rows))
    header, rule, *lines = qstat_view.table(rows).splitlines()
    assert header == ("job-ID  prior   name       user         state submit/start at     queue                 "
                      "         slots ja-task-ID ")
    assert rule == "-" * 113
    assert [line.split()[4] for line in lines] == ["r", "r", "r", "qw", "hqw", "Eqw", "hqw"]  # by priority, then submission


def test_a_line_per_task_and_ranges_of_waiting_tasks() -> None:
    sweep = jobs()[1]
    assert [r.tasks for r in qstat_view.rows(sweep)] == ["1", "2", "3-10:1"]
    assert [r.tasks for r in qstat_view.rows(sweep, each_task=True)][2:] == [str(i) for i in range(3, 11)]
    assert qstat_view.task_ranges([1, 3, 5, 6, 9]) == "1-5:2,6-9:3" and qstat_view.task_ranges([4]) == "4"


def test_full_and_xml_listings() -> None:
    rows = [row for job in jobs() for row in qstat_view.rows(job)]
    nodes = [NodeInfo(name=name, state="up", cpus=8, memory_mib=1000, cpus_used=0, memory_mib_used=0, running=0,
                      last_seen=None) for name in ("node1", "node2")]
    golden("qstat-f.txt", qstat_view.full(rows, nodes, ["all.q"], "lx-amd64"))
    golden("qstat-xml.xml", qstat_view.xml(rows))
    import xml.etree.ElementTree as ET

    document = ET.fromstring(qstat_view.xml(rows))
    running = document.findall("./queue_info/job_list")
    assert [(j.get("state"), j.findtext("JB_job_number"), j.findtext("state")) for j in running][:1] == [
        ("running", "12", "r")]
    assert document.find("./job_info/job_list/tasks").text == "3-10:1"  # type: ignore[union-attr]


def test_job_detail_and_unknown_jobs() -> None:
    job = a_job(13, "sweep", array="1-10:1", tasks=[a_task(1, "running")], counts={"running": 1, "pending": 9},
                cpus=2, memory_mib=2048, time_limit_s=3600, submit_dir="/home/alice/x")
    golden("qstat-j.txt", qstat_detail.text(job, 1000, 1000, "alice"))
    golden("qstat-j.xml", qstat_detail.xml([job], 1000, 1000, "alice"))
    assert qstat_detail.not_found(["7", "8"]) == "Following jobs do not exist: \n7, 8\n"
    assert "<unknown_jobs " in qstat_detail.xml_not_found(["7"])


def test_qacct_record() -> None:
    usage = Usage(user_cpu_s=1.25, sys_cpu_s=0.5, max_rss_kib=2048, minor_faults=10, wall_s=5)
    task = a_task(3, "completed", exit_code=2, ended_at=T0 + 105, usage=usage)
    task.exit_status = 2
    job = a_job(13, "sweep", array="1-10:1", tasks=[task], cpus=2)
    (record,) = [qacct.Record(job, t, a) for t in job.tasks for a in t.attempts]
    golden("qacct-j.txt", qacct.showjob(record, "users"))
    killed = a_task(0, "cancelled", signal=9, terminated=True, ended_at=T0 + 101)
    text = qacct.showjob(qacct.Record(a_job(20), killed, killed.attempts[0]), "users")
    assert "\nfailed       100 : assumedly after job\n" in text and "\nexit_status  137 " in text


def test_qacct_has_no_record_of_an_attempt_stopped_before_its_job_started() -> None:
    """A promise taken back (or a dispatched task cancelled before its shepherd began) ended with
    no status of its own: no job ran, so qacct has no record of it (it showed `exit_status 0`
    beside the task's real one). An attempt that failed before its job keeps its record."""
    taken_back = AttemptInfo(number=1, node="node1", cpu_ids=[0], dispatched_at=T0, ended_at=T0 + 1,
                             terminated=True, after="13.2.1")
    ran = AttemptInfo(number=2, node="node1", cpu_ids=[0], dispatched_at=T0 + 2, started_at=T0 + 2,
                      ended_at=T0 + 3, exit_code=0)
    failed = AttemptInfo(number=1, node="node1", cpu_ids=[0], dispatched_at=T0, ended_at=T0 + 1, exit_code=1,
                         failure="cannot enter the working directory")
    job = a_job(13, "sweep", array="1-2:1", tasks=[
        TaskInfo(index=1, state="completed", state_since=T0 + 3, exit_status=0, attempts=[taken_back, ran]),
        TaskInfo(index=2, state="failed", state_since=T0 + 1, exit_status=1, attempts=[failed])])
    assert [(r.task.index, r.attempt.number) for r in qacct._records(job)] == [(1, 2), (2, 1)]
