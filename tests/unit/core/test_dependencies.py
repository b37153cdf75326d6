"""Dependencies on plain data: every kind, `,` and `?`, aftercorr task by task, singleton, the text form."""

from __future__ import annotations

import pytest

from drover.core.dependencies import (
    Dependencies,
    Dependency,
    Progress,
    Verdict,
    evaluate,
    never_text,
    parse_dependencies,
    verdict,
    waiting_text,
)
from drover.core.errors import BadRequest

WAITING = Progress(started=False)
RUNNING = Progress(started=True)
COMPLETED = Progress(True, "completed")
FAILED = Progress(True, "failed")
TIMEOUT = Progress(True, "timeout")
CANCELLED_BEFORE_START = Progress(False, "cancelled")


@pytest.mark.parametrize(("kind", "progress", "expected"), [
    ("after", WAITING, Verdict.WAITING), ("after", RUNNING, Verdict.MET),
    ("after", CANCELLED_BEFORE_START, Verdict.MET), ("after", FAILED, Verdict.MET),
    ("afterok", WAITING, Verdict.WAITING), ("afterok", RUNNING, Verdict.WAITING),
    ("afterok", COMPLETED, Verdict.MET), ("afterok", FAILED, Verdict.NEVER), ("afterok", TIMEOUT, Verdict.NEVER),
    ("afternotok", RUNNING, Verdict.WAITING), ("afternotok", FAILED, Verdict.MET),
    ("afternotok", TIMEOUT, Verdict.MET), ("afternotok", Progress(True, "node_fail"), Verdict.MET),
    ("afternotok", COMPLETED, Verdict.NEVER),
    ("afterany", RUNNING, Verdict.WAITING), ("afterany", COMPLETED, Verdict.MET), ("afterany", FAILED, Verdict.MET),
    ("afterany", CANCELLED_BEFORE_START, Verdict.MET),
])
def test_each_kind_against_what_its_job_did(kind: str, progress: Progress, expected: Verdict) -> None:
    assert verdict(Dependency(kind, 12), progress) is expected


def test_a_job_that_does_not_exist_is_never_met_but_a_missing_corresponding_task_is() -> None:
    assert verdict(Dependency("afterany", 99), None) is Verdict.NEVER
    assert verdict(Dependency("afterok", 99, per_task=True), None) is Verdict.MET


def jobs(**progress: Progress) -> object:
    """A lookup from {"j12": ..., "j12_3": ...}."""
    def lookup(job: int, task: int | None) -> Progress | None:
        return progress.get(f"j{job}" if task is None else f"j{job}_{task}")
    return lookup


def test_all_of_them_with_comma_and_any_of_them_with_question_mark() -> None:
    lookup = jobs(j1=COMPLETED, j2=RUNNING, j3=FAILED)
    both = parse_dependencies("afterok:1,afterok:2")
    assert evaluate(both, lookup).verdict is Verdict.WAITING  # type: ignore[arg-type]
    assert evaluate(both, lookup).waiting_on == (Dependency("afterok", 2),)  # type: ignore[arg-type]
    assert evaluate(parse_dependencies("afterok:1?afterok:2"), lookup).verdict is Verdict.MET  # type: ignore[arg-type]
    assert evaluate(parse_dependencies("afterok:3,afterok:2"), lookup).verdict is Verdict.NEVER  # type: ignore[arg-type]
    # one that can never be met does not end an `?` while another may still be
    assert evaluate(parse_dependencies("afterok:3?afterok:2"), lookup).verdict is Verdict.WAITING  # type: ignore[arg-type]
    assert evaluate(parse_dependencies("afterok:3?afternotok:1"), lookup).verdict is Verdict.NEVER  # type: ignore[arg-type]
    assert evaluate(Dependencies(), lookup).verdict is Verdict.MET  # type: ignore[arg-type]


def test_aftercorr_waits_task_by_task() -> None:
    lookup = jobs(j5_1=COMPLETED, j5_2=RUNNING, j5_3=FAILED)
    corr = parse_dependencies("aftercorr:5")
    assert [evaluate(corr, lookup, index).verdict for index in (1, 2, 3, 4)] == [  # type: ignore[arg-type]
        Verdict.MET, Verdict.WAITING, Verdict.NEVER, Verdict.MET]  # task 4: array 5 has none


def test_a_dependency_on_one_array_task() -> None:
    lookup = jobs(j7=RUNNING, j7_2=COMPLETED)
    assert evaluate(parse_dependencies("afterok:7_2"), lookup).verdict is Verdict.MET  # type: ignore[arg-type]
    assert evaluate(parse_dependencies("afterok:7"), lookup).verdict is Verdict.WAITING  # type: ignore[arg-type]


def test_singleton_waits_while_another_job_of_the_name_runs() -> None:
    single = parse_dependencies("singleton")
    assert single.singleton
    assert evaluate(single, jobs(), singleton_free=False).verdict is Verdict.WAITING  # type: ignore[arg-type]
    assert evaluate(single, jobs(), singleton_free=True).verdict is Verdict.MET  # type: ignore[arg-type]


def test_the_words_name_the_jobs_and_kinds() -> None:
    assert waiting_text([Dependency("afterok", 12)]) == "waiting for job 12 (afterok) to complete"
    assert waiting_text([Dependency("after", 3, 4), Dependency("afternotok", 5)], any_=True) == (
        "waiting for task 3.4 (after) to start or job 5 (afternotok) to fail")
    assert never_text([Dependency("afterok", 12)]) == "job 12 (afterok) did not complete"
    assert never_text([Dependency("afternotok", 12)]) == "job 12 (afternotok) completed successfully"


def test_the_text_form_round_trips_and_bad_text_is_refused_clearly() -> None:
    parsed = parse_dependencies("after:1:2_3,afterany:4,aftercorr:5,afternotok:6.7,singleton")
    assert parsed.on == (Dependency("after", 1), Dependency("after", 2, 3), Dependency("afterany", 4),
                         Dependency("afterok", 5, per_task=True), Dependency("afternotok", 6, 7),
                         Dependency("singleton"))
    assert parsed.text == "after:1,after:2.3,afterany:4,aftercorr:5,afternotok:6.7,singleton"
    assert parse_dependencies(parsed.text) == parsed
    for bad, words in [("afterok", "needs a job id"), ("afterok:x", "not a job id"), ("afterok:0", "not a job id"),
                       ("before:1", "unknown kind"), ("afterok:1,afterok:2?afterok:3", "not both"),
                       ("after:1+5", "+TIME"), ("aftercorr:5_1", "whole arrays"), ("", "unknown kind")]:
        with pytest.raises(BadRequest, match=words.replace("+", r"\+")):
            parse_dependencies(bad)
