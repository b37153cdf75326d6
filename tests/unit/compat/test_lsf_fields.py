"""A Drover job as bjobs shows it (compat/lsf/fields.py, common.py): LSF's states, exit codes,
hosts and dependency conditions, and -o's field names, on plain data."""

from __future__ import annotations

from typing import Any

import pytest

from drover.compat.lsf.bjobs import _columns
from drover.compat.lsf.common import parse_ref, task_state
from drover.compat.lsf.fields import FIELDS, exec_host, field_name, rows
from drover.compat.lsf.syntax import LsfUsageError
from drover.protocol.api import AttemptInfo, DependencyOn, JobInfo, TaskInfo


def a_job(**overrides: Any) -> JobInfo:
    fields: dict[str, Any] = {
        "id": 12, "name": "job", "owner": "u", "state": "running", "queue": "default", "submitted_at": 0.0,
        "priority": 0, "cpus": 1, "memory_mib": 0, "time_limit_s": None, "array": None,
        "task_counts": {"running": 1}, "workdir": "/w", "output": "/w/%j.out", "error": None}
    fields.update(overrides)
    return JobInfo(**fields)


def a_task(state: str, index: int = 0, **attempt: Any) -> TaskInfo:
    attempts = [AttemptInfo(number=1, node="n1", cpu_ids=[0], dispatched_at=1.0, **attempt)] if attempt else []
    return TaskInfo(index=index, state=state, state_since=5.0, attempts=attempts,
                    exit_status=attempt.get("exit_code"))


@pytest.mark.parametrize(("state", "suspended_by", "lsf"), [
    ("pending", [], "PEND"), ("held", [], "PSUSP"), ("dispatched", [], "RUN"), ("running", [], "RUN"),
    ("suspended", ["job"], "USUSP"), ("suspended", ["queue"], "SSUSP"), ("completing", [], "RUN"),
    ("completed", [], "DONE"), ("failed", [], "EXIT"), ("cancelled", [], "EXIT"), ("timeout", [], "EXIT")])
def test_lsf_states(state: str, suspended_by: list[str], lsf: str) -> None:
    assert task_state(TaskInfo(index=0, state=state, state_since=0.0, suspended_by=suspended_by)) == lsf


def test_a_failed_job_shows_its_exit_code_and_a_done_one_none() -> None:
    failed = rows(a_job(state="failed", tasks=[a_task("failed", started_at=2.0, ended_at=4.0, exit_code=3)]))[0]
    assert (FIELDS["stat"](failed), FIELDS["exit_code"](failed), FIELDS["exec_host"](failed)) == ("EXIT", "3", "n1")
    done = rows(a_job(state="completed", tasks=[a_task("completed", started_at=2.0, ended_at=4.0, exit_code=0)]))[0]
    assert (FIELDS["stat"](done), FIELDS["exit_code"](done)) == ("DONE", "")
    assert FIELDS["run_time"](done) == "2 second(s)"


def test_hosts_slots_and_elements() -> None:
    spread = a_job(cpus=8, pe_per_node=4, tasks=[TaskInfo(index=0, state="running", state_since=0.0, attempts=[
        AttemptInfo(number=1, node="n1", cpu_ids=[0, 1, 2, 3], dispatched_at=1.0, started_at=1.0,
                    other_nodes={"n2": [0, 1, 2, 3]})])])
    assert exec_host(rows(spread)[0]) == "4*n1:4*n2"
    array = a_job(array="1-3", task_counts={"pending": 3})
    assert [(r.ident, r.name, r.state) for r in rows(array)] == [
        ("12[1]", "job[1]", "PEND"), ("12[2]", "job[2]", "PEND"), ("12[3]", "job[3]", "PEND")]
    assert exec_host(rows(array)[0]) == "-"
    assert FIELDS["output_file"](rows(a_job(array="1-3", output="/w/o.%j.%a.%%"))[1]) == "/w/o.12.2.%"


def test_dependencies_are_told_as_lsf_conditions() -> None:
    job = a_job(dependencies=[DependencyOn(kind="afterok", job=3), DependencyOn(kind="afterany", job=4, task=2)])
    assert FIELDS["dependency"](rows(job)[0]) == "done(3) && ended(4[2])"
    either = a_job(dependencies=[DependencyOn(kind="afternotok", job=3), DependencyOn(kind="after", job=5)],
                   dependency_any=True)
    assert FIELDS["dependency"](rows(either)[0]) == "exit(3) || started(5)"


def test_field_names_widths_and_delimiters() -> None:
    assert field_name("JOBID") == "jobid" and field_name("id") == "jobid" and field_name("nope") is None
    assert _columns("jobid stat:8 exit_code delimiter='^'") == ([("jobid", None), ("stat", 8), ("exit_code", None)],
                                                              "^")
    with pytest.raises(LsfUsageError, match="nope: Illegal field name"):
        _columns("jobid nope")


def test_job_ids() -> None:
    assert parse_ref("12") == (12, None) and parse_ref("12[3]") == (12, 3)
    assert parse_ref("12[]") is None and parse_ref("x") is None
