"""qmod's forms on queue instances (-sq, -usq, -rq; -s, -us, -r given queues) and how qstat shows a
suspended queue instance and its jobs (sge_qstat(5): a job `s` suspended on its own, `S` by its
queue, both when both; `qstat -f` shows the instance's state `s`), on plain data."""

from __future__ import annotations

import pytest
from tests.unit.compat.test_qstat_formats import a_job, a_task

from drover.compat.gridengine import qmod, qmod_queues, qstat_view
from drover.compat.gridengine.common import task_state
from drover.protocol.api import NodeInfo, QueueInfo, TaskInfo


def _queue(name: str, nodes: list[str], suspended: dict[str, str] | None = None) -> QueueInfo:
    return QueueInfo(name=name, state="open", defined_in="built in", node_names=nodes, suspended=suspended or {})


QUEUES = [_queue("default", ["n1", "n2"]), _queue("short", ["n2"])]


def test_gridengine_qmod_queue_words_name_instances_or_every_instance_of_a_queue() -> None:
    def named(word: str) -> list[str]:
        return [f"{queue.name}@{node}" for queue, node in qmod_queues.instances(QUEUES, word)]

    assert named("all.q") == ["default@n1", "default@n2"]  # all.q is Drover's default
    assert named("all.q@n2") == ["default@n2"]
    assert named("*@n2") == ["default@n2", "short@n2"]
    assert named("short@n1") == [] and named("nope") == []


def test_gridengine_qstat_shows_a_job_suspended_by_its_queue_S_by_itself_s_and_both_sS() -> None:
    def shown(state: str, reasons: list[str]) -> str | None:
        return task_state(TaskInfo(index=0, state=state, state_since=0.0, suspended_by=reasons))

    assert shown("suspended", ["job"]) == "s" and shown("suspended", ["queue"]) == "S"
    assert shown("suspended", ["job", "queue"]) == "sS"
    assert shown("suspended", []) == "s" and shown("running", []) == "r"


def test_gridengine_qstat_f_shows_a_suspended_queue_instance_in_state_s_with_its_jobs() -> None:
    task = a_task(0, "suspended", node="n1")
    task.suspended_by = ["queue"]
    rows = qstat_view.rows(a_job(12, tasks=[task], counts={"suspended": 1}, state="suspended"))
    nodes = [NodeInfo(name=name, state="up", cpus=4, memory_mib=1000, cpus_used=0, memory_mib_used=0, running=0,
                      last_seen=None, suspended_queues={"default": "by root"} if name == "n1" else {})
             for name in ("n1", "n2")]
    lines = qstat_view.full(rows, nodes, ["all.q"], "lx-amd64").splitlines()
    instance = next(line for line in lines if line.startswith("all.q@n1"))
    assert instance.split()[-1] == "s"
    assert next(line for line in lines if line.startswith("all.q@n2")).split()[-1] == "lx-amd64"
    assert lines[lines.index(instance) + 1].split()[4] == "S"  # its job, under it


def test_gridengine_qmod_s_given_jobs_and_queues_at_once_or_sj_given_a_queue_is_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert qmod.main(["-s", "12", "all.q"]) == 1
    assert "not both at once" in capsys.readouterr().err
    assert qmod.main(["-sj", "all.q@n1"]) == 1
    assert "give job ids to -sj" in capsys.readouterr().err
    assert qmod.main(["-sq", "12"]) == 1
    assert "-sq, -usq and -rq take queues" in capsys.readouterr().err
    assert qmod.main(["-usq"]) == 1


def test_gridengine_qmod_rq_names_the_jobs_running_in_the_instance() -> None:
    jobs = [a_job(12, tasks=[a_task(0, "running", node="n1")], counts={"running": 1}, state="running"),
            a_job(13, array="1-3", tasks=[a_task(1, "suspended", node="n1"), a_task(2, "running", node="n2")],
                  counts={"running": 1, "suspended": 1}),
            a_job(14, tasks=[a_task(0, "running", node="n1")], counts={"running": 1}, queue="short")]
    assert qmod_queues.running_in(jobs, "default", "n1") == [("12", "job 12"), ("13.1", "job-array task 13.1")]
