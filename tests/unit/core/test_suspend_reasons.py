"""A task's reasons to be frozen (core/suspension.py), on plain data: Grid Engine's job states `s`
(the job's own suspension) and `S` (its queue instance's) are independent; the attempt is frozen
while either holds, and thawed only when neither does."""

from __future__ import annotations

from drover.core import suspension
from drover.core.job import Task
from drover.core.job_state import JobState, Trigger
from drover.core.suspension import NONE, Move, SuspendReason

JOB, QUEUE = SuspendReason.JOB, SuspendReason.QUEUE


def test_the_first_reason_freezes_and_a_second_adds_no_order() -> None:
    assert suspension.suspend(NONE, QUEUE) == Move(frozenset({QUEUE}), "suspend")
    assert suspension.suspend(frozenset({QUEUE}), JOB) == Move(frozenset({JOB, QUEUE}), None)
    assert suspension.suspend(frozenset({JOB}), JOB) == Move(frozenset({JOB}), None)


def test_gridengine_s_and_S_are_independent_each_undone_on_its_own() -> None:
    both = frozenset({JOB, QUEUE})
    # The queue instance unsuspended: the job suspended on its own stays frozen.
    assert suspension.resume(both, QUEUE) == Move(frozenset({JOB}), None)
    # The job resumed on its own while its queue instance is suspended: still frozen.
    assert suspension.resume(both, JOB) == Move(frozenset({QUEUE}), None)
    # The last reason undone thaws it.
    assert suspension.resume(frozenset({JOB}), JOB) == Move(NONE, "resume")
    assert suspension.resume(frozenset({QUEUE}), QUEUE) == Move(NONE, "resume")


def test_undoing_a_reason_the_task_does_not_have_changes_nothing() -> None:
    assert suspension.resume(frozenset({QUEUE}), JOB) == Move(frozenset({QUEUE}), None)
    assert suspension.resume(NONE, QUEUE) == Move(NONE, None)


def test_reasons_are_kept_as_text_and_read_back() -> None:
    for reasons in (NONE, frozenset({JOB}), frozenset({QUEUE}), frozenset({JOB, QUEUE})):
        assert suspension.parse(suspension.text(reasons)) == reasons
    assert suspension.text(frozenset({QUEUE, JOB})) == "job,queue" and suspension.text(NONE) is None


def test_gridengine_qstat_letters_s_for_the_job_S_for_its_queue_both_when_both() -> None:
    assert suspension.ge_letters(frozenset({JOB})) == "s"
    assert suspension.ge_letters(frozenset({QUEUE})) == "S"
    assert suspension.ge_letters(frozenset({JOB, QUEUE})) == "sS"


def test_a_tasks_reasons_end_with_its_attempt() -> None:
    task = Task(1, 0, JobState.SUSPENDED, 0.0, attempt=1, suspended_by=frozenset({JOB, QUEUE}))
    task.apply(Trigger.RESUME, 1.0)  # thawed, but wanted frozen still: the reasons stay
    assert task.suspended_by == {JOB, QUEUE}
    task.apply(Trigger.EXIT, 2.0)
    assert task.state is JobState.COMPLETING and task.suspended_by == NONE
