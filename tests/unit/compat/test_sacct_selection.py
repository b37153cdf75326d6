"""Which jobs and lines sacct prints, with Slurm's rules for its time window
(slurmdb_job_cond_def_start_end) and its job, step and state selections."""

from __future__ import annotations

import pytest
from tests.unit.compat.slurm_fixtures import ALL, ARRAY, KILLED, NOW, T0, attempt, job

from drover.compat.slurm.common import Refused
from drover.compat.slurm.sacct import choose_fields
from drover.compat.slurm.sacct_columns import Units
from drover.compat.slurm.sacct_select import JobRef, Selection, job_refs, lines_of, state_names
from drover.protocol.api import TaskInfo


def chosen(values: dict[str, list[str]], keys: list[str] | None = None, users: set[str] | None = None) -> list[str]:
    selection = Selection.from_options(values, keys or list(values), NOW, users)
    return [line.job.job_id_text + (f".{line.step}" if line.step else "")
            for info in ALL for line in lines_of(info, selection, NOW, Units())]


def test_window_defaults_follow_slurm() -> None:
    # -j alone: from the Epoch until now, so every job named, ended or not.
    assert chosen({"jobs": ["43,44"]}) == ["43", "43.batch", "44", "44.batch"]
    # -s alone: the instant now, so only jobs in that state now (ended ones ended before it).
    assert chosen({"state": ["R"]}) == ["42", "42.batch", "50_2", "50_2.batch"]
    assert chosen({"state": ["CD"]}) == []
    # -s with -S: from -S until -S... unless -E; a final state must have been reached in the window.
    assert chosen({"state": ["CD,F"], "starttime": ["2000-01-01"], "endtime": ["now"]}) == [
        "50_1", "50_1.batch", "43", "43.batch"]
    # -j and -s: from the Epoch until now.
    assert chosen({"jobs": ["45"], "state": ["TO"]}) == ["45", "45.batch"]


def test_allocations_steps_and_array_tasks() -> None:
    assert chosen({"jobs": ["50"], "allocations": [""]}) == ["50_1", "50_2", "50_[3-6%2]"]
    assert chosen({"jobs": ["50_2"]}) == ["50_2", "50_2.batch"]
    assert chosen({"jobs": ["50.batch"]}) == ["50_1.batch", "50_2.batch"]
    assert chosen({"jobs": ["50"], "allocations": [""], "array": [""]}) == [
        "50_1", "50_2", "50_3", "50_4", "50_5", "50_6"]
    assert chosen({"jobs": ["42", "43"], "allocations": [""]}) == ["42", "43"]  # -j repeated


def test_filters() -> None:
    assert chosen({"jobs": ["42,43,44"], "name": ["train,stopped"], "allocations": [""]}) == ["42", "44"]
    assert chosen({"jobs": ["42,43"], "partition": ["other"]}) == []
    assert chosen({"jobs": ["42,43"], "nodelist": ["n[1-2]"], "allocations": [""]}) == ["42", "43"]
    assert chosen({"jobs": ["42,43"], "timelimit-max": ["2:00:00"], "allocations": [""]}) == ["42"]
    assert chosen({"jobs": ["42,46"], "reason": ["JobHeldUser"], "allocations": [""]}) == ["46"]
    assert chosen({"jobs": ["42"]}, users={"nobody-at-all"}) == []


def test_duplicates_show_every_attempt() -> None:
    requeued = job(id=60, state="completed", task_counts={"completed": 1}, ended_at=T0 + 200, tasks=[
        TaskInfo(index=0, state="completed", state_since=T0 + 200, attempts=[
            attempt(1, end=T0 + 50, signal=15), attempt(2, start=T0 + 60, end=T0 + 200, code=0)])])
    selection = Selection.from_options({"jobs": ["60"], "duplicates": [""]}, ["jobs", "duplicates"], NOW, None)
    states = [(line.job.state, line.step) for line in lines_of(requeued, selection, NOW, Units())]
    assert states == [("REQUEUED", None), ("REQUEUED", "batch"), ("COMPLETED", None), ("COMPLETED", "batch")]


def test_what_sacct_refuses() -> None:
    with pytest.raises(Refused, match="unrecognized job state value: BOGUS"):
        state_names("R,BOGUS")
    assert state_names("pd,CANCELLED,oom") == {"PENDING", "CANCELLED", "OUT_OF_MEMORY"}
    with pytest.raises(Refused, match="Bad job/step specified: 12x"):
        job_refs("12x")
    assert job_refs("12,13_4,14.batch") == [JobRef(12), JobRef(13, 4), JobRef(14, None, "batch")]
    with pytest.raises(Refused, match=r"Start time \(.*\) requested is after end time"):
        Selection.from_options({"starttime": ["now"], "endtime": ["now-1day"]}, [], NOW, None)
    with pytest.raises(Refused, match='Invalid field requested: "bogus"'):
        choose_fields("jobid,bogus")
    with pytest.raises(Refused, match="AllocGRES has been removed, please use AllocTRES"):
        choose_fields("AllocGRES")
    # the first field of the table that starts so: "st" is Start, as sacct reads it
    assert [f.name for f in choose_fields("jobidr,jobn%30,st,stat")] == ["JobIDRaw", "JobName", "Start", "State"]
    assert [f.width for f in choose_fields("jobn%30,jobid%-20")] == [30, -20]
    assert len(choose_fields("ALL")) == len(choose_fields("a")) > 100  # a prefix of ALL is ALL, as in sacct


def test_the_fixtures_are_what_the_tests_say() -> None:
    assert ARRAY.array == "1-6" and KILLED.tasks[0].attempts[0].signal == 9
