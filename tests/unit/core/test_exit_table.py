"""Grid Engine's exit table (seeds/gridengine-shepherd-manpage.txt, "The following exit values are
returned"), as core/exit_status.EXIT_TABLE says it: one test per row of the man page, on plain
data; the table is whole, and docs/seeds.md quotes every row of it as it is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from drover.core.exit_status import (
    EXIT_ROWS,
    EXIT_TABLE,
    GRID_ENGINE,
    PLAIN,
    ExitFacts,
    ExitRow,
    ExitSemantics,
    classify_exit,
    exit_row,
    method_meaning,
    node_failure,
    queue_failure,
)
from drover.core.job_state import Trigger as T

SEEDS = Path(__file__).resolve().parents[3] / "docs" / "seeds.md"
NO_RESCHEDULE = ExitSemantics(forbid_reschedule=True)
NO_APPERROR = ExitSemantics(forbid_apperror=True)


def site(step: str, code: int, job_exit: int | None = 0, level: str = "node") -> ExitFacts:
    """An attempt whose site method `step` exited `code`; the job exited `job_exit` (None: it did
    not run, as after a failing prolog or PE start)."""
    return ExitFacts(job_exit, methods=((step, level, code),))


def outcome(facts: ExitFacts, semantics: ExitSemantics = GRID_ENGINE) -> tuple[T, bool]:
    """What the attempt does to the job, and whether the job's queue goes in error on the node."""
    return classify_exit(facts, semantics), queue_failure(facts, semantics) is not None


# -- the job script ------------------------------------------------------------------------------

def test_gridengine_manpage_job_exit_0_succeeds() -> None:
    assert outcome(ExitFacts(0)) == (T.SUCCEED, False)


def test_gridengine_manpage_job_exit_99_requeues_unless_forbid_reschedule() -> None:
    assert outcome(ExitFacts(99)) == (T.REQUEUE, False)
    assert outcome(ExitFacts(99), NO_RESCHEDULE) == (T.FAIL, False)  # "Otherwise, see Other": it fails with 99


def test_gridengine_manpage_job_exit_100_holds_in_error_unless_forbid_apperror() -> None:
    assert outcome(ExitFacts(100)) == (T.ERROR_HOLD, False)
    assert outcome(ExitFacts(100), NO_APPERROR) == (T.FAIL, False)


def test_gridengine_manpage_job_other_exit_is_the_jobs_own_status_and_no_action_is_taken() -> None:
    for code in (1, 2, 3, 98, 101, 255):
        assert outcome(ExitFacts(code)) == (T.FAIL, False)


# -- prolog -----------------------------------------------------------------------------------

def test_gridengine_manpage_prolog_exit_0_leaves_the_job_to_its_own_status() -> None:
    assert outcome(site("prolog", 0)) == (T.SUCCEED, False)
    assert outcome(site("prolog", 0, job_exit=3)) == (T.FAIL, False)


def test_gridengine_manpage_prolog_exit_99_requeues_without_a_queue_error() -> None:
    assert outcome(site("prolog", 99, None)) == (T.REQUEUE, False)
    assert outcome(site("prolog", 99, None, level="queue")) == (T.REQUEUE, False)


def test_gridengine_manpage_prolog_exit_100_holds_the_job_in_error_without_a_queue_error() -> None:
    assert outcome(site("prolog", 100, None)) == (T.ERROR_HOLD, False)


def test_gridengine_manpage_prolog_failure_sets_the_queue_in_error_and_requeues() -> None:
    for code in (1, 2, 3, 124, 137):
        assert outcome(site("prolog", code, None)) == (T.REQUEUE, True)
        assert outcome(site("prolog", code, None, level="queue")) == (T.REQUEUE, True)
    # with FORBID_RESCHEDULE and FORBID_APPERROR, 99 and 100 are "Other" too
    assert outcome(site("prolog", 99, None), NO_RESCHEDULE) == (T.REQUEUE, True)
    assert outcome(site("prolog", 100, None), NO_APPERROR) == (T.REQUEUE, True)


# -- parallel environment start and stop ----------------------------------------------------

def test_gridengine_manpage_pe_start_exit_0_leaves_the_job_to_its_own_status() -> None:
    assert outcome(site("pe_start", 0)) == (T.SUCCEED, False)


def test_gridengine_manpage_pe_start_failure_sets_the_queue_in_error_and_requeues() -> None:
    for code in (1, 2, 99, 100):  # 1 and 2 are the job's, the prolog's and the epilog's only
        assert outcome(site("pe_start", code, None)) == (T.REQUEUE, True)


def test_gridengine_manpage_pe_stop_exit_0_leaves_the_job_to_its_own_status() -> None:
    assert outcome(site("pe_stop", 0, job_exit=5)) == (T.FAIL, False)


def test_gridengine_manpage_pe_stop_failure_sets_the_queue_in_error_and_does_not_requeue() -> None:
    for code in (1, 2, 99, 100):
        assert outcome(site("pe_stop", code)) == (T.SUCCEED, True)  # "the job itself ran successfully"
        assert outcome(site("pe_stop", code, job_exit=4)) == (T.FAIL, True)
        assert outcome(site("pe_stop", code, job_exit=99)) == (T.REQUEUE, True)


# -- epilog -----------------------------------------------------------------------------------

def test_gridengine_manpage_epilog_exit_0_leaves_the_job_to_its_own_status() -> None:
    assert outcome(site("epilog", 0)) == (T.SUCCEED, False)
    assert outcome(site("epilog", 0, job_exit=100)) == (T.ERROR_HOLD, False)


def test_gridengine_manpage_epilog_exit_99_requeues_without_a_queue_error() -> None:
    assert outcome(site("epilog", 99)) == (T.REQUEUE, False)
    assert outcome(site("epilog", 99, level="queue")) == (T.REQUEUE, False)


def test_gridengine_manpage_epilog_exit_100_holds_the_job_in_error_without_a_queue_error() -> None:
    assert outcome(site("epilog", 100)) == (T.ERROR_HOLD, False)


def test_gridengine_manpage_epilog_failure_sets_the_queue_in_error_and_requeues() -> None:
    for code in (1, 2, 3):
        assert outcome(site("epilog", code)) == (T.REQUEUE, True)  # though the job ran, and succeeded
        assert outcome(site("epilog", code, level="queue")) == (T.REQUEUE, True)
    assert outcome(site("epilog", 99), NO_RESCHEDULE) == (T.REQUEUE, True)
    assert outcome(site("epilog", 100), NO_APPERROR) == (T.REQUEUE, True)


# -- the switches, and what is not the man page's -------------------------------------------

def test_gridengine_forbid_reschedule_and_forbid_apperror_together_are_the_plain_semantics() -> None:
    assert ExitSemantics(forbid_reschedule=True, forbid_apperror=True) == PLAIN and PLAIN.plain
    assert not GRID_ENGINE.plain and not NO_RESCHEDULE.plain and not NO_APPERROR.plain
    for code in range(256):
        assert classify_exit(ExitFacts(code), PLAIN) is (T.SUCCEED if code == 0 else T.FAIL)


def test_a_requeue_for_a_queue_error_is_held_with_requeue_held_and_one_asked_for_is_not() -> None:
    held = ExitSemantics(requeue_held=True)
    assert classify_exit(ExitFacts(None, methods=(("prolog", "node", 1),), requeue_held=held.requeue_held)) \
        is T.ERROR_HOLD
    assert classify_exit(ExitFacts(None, methods=(("prolog", "node", 99),), requeue_held=True)) is T.REQUEUE
    assert classify_exit(ExitFacts(99, requeue_held=True)) is T.REQUEUE


def test_the_jobs_own_prolog_and_epilog_are_the_accelerators_and_never_set_a_queue_in_error() -> None:
    assert outcome(site("prolog", 99, None, level="job")) == (T.FAIL, False)
    assert outcome(site("prolog", 1, None, level="job")) == (T.FAIL, False)
    assert outcome(site("epilog", 1, level="job")) == (T.SUCCEED, False)
    asked = ExitFacts(0, methods=(("epilog", "job", 99),), epilog_sets_exit=True)
    assert outcome(asked) == (T.REQUEUE, False)  # its status is the job's, read by the job's rows


def test_the_first_method_that_means_something_decides_and_every_failure_sets_the_queue_in_error() -> None:
    facts = ExitFacts(None, methods=(("prolog", "node", 99), ("epilog", "queue", 1)))
    assert outcome(facts) == (T.REQUEUE, True)
    assert queue_failure(facts) == "the queue epilog exited with status 1"
    assert node_failure(facts) is None  # a failing method is the queue's, not the node's
    assert node_failure(ExitFacts(None, node_fault=True, failure="disk full")) == "disk full"


def test_the_table_has_a_row_for_every_method_and_status_the_man_page_names() -> None:
    methods = ("job", "prolog", "pe_start", "pe_stop", "epilog", *ACTING_METHODS)
    assert sorted({row.method for row in EXIT_TABLE}) == sorted(methods)
    assert len(EXIT_ROWS) == len(EXIT_TABLE)  # no row twice
    for method in methods:
        statuses = {row.status for row in EXIT_TABLE if row.method == method}
        asking = method in ("job", "prolog", "epilog")
        assert statuses == ({"0", "99", "100", "other"} if asking else {"0", "other"}), method
        for code in (0, 1, 2, 99, 100, 255):
            assert exit_row(method, code) in EXIT_TABLE
    for row in EXIT_TABLE:
        assert row.seed.split(" - ")[0] == {"0": "0", "99": "1", "100": "2", "other": "Other"}[row.status]


def _documented_rows() -> dict[tuple[str, str], tuple[str, str, str]]:
    """docs/seeds.md's exit table: (method, status) → (the man page's words, the job, the queue)."""
    text = SEEDS.read_text()
    sections = [text.split(title, 1)[1].split("\n## ", 1)[0]
                for title in ("## Grid Engine: the shepherd's exit table", METHODS_SECTION)]
    rows = {}
    for line in "\n".join(sections).splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] not in ("method", "---"):
            method = cells[0].replace("PE ", "pe_")
            status = "other" if cells[1] in ("other", "any other") else cells[1]
            rows[method, status] = (cells[2], cells[3], cells[4])
    return rows


DOCUMENTED_JOB = {T.SUCCEED: "COMPLETED", T.REQUEUE: "requeued", T.ERROR_HOLD: "error hold", T.FAIL: "FAILED"}


@pytest.mark.parametrize("row", EXIT_TABLE, ids=lambda row: f"{row.method}-{row.status}")
def test_docs_seeds_quotes_each_row_of_the_table(row: ExitRow) -> None:
    words, job, queue = _documented_rows()[row.method, row.status]
    quoted = re.fullmatch(r'"(.*)"(?: \(.*\))?', words)
    assert quoted is not None and quoted.group(1) in row.seed, (words, row.seed)
    assert (queue == "in error") is row.queue_error
    if row.job is None:
        assert job in ("–", "keeps its own status")
    else:
        assert job.startswith(DOCUMENTED_JOB[row.job])
    assert len(_documented_rows()) == len(EXIT_TABLE)


# The methods that act on a running job, and the checkpoint environment's: their rows are in
# docs/seeds.md's section on the configurable methods.
METHODS_SECTION = "## Grid Engine: suspend, resume and terminate methods, and -notify"
ACTING_METHODS = ("suspend", "resume", "restart", "terminate", "clean", "migrate", "checkpoint")


@pytest.mark.parametrize("method", ["suspend", "resume", "restart", "terminate", "clean", "migrate"])
def test_gridengine_manpage_suspend_restart_terminate_clean_and_migrate_always_successful(method: str) -> None:
    """The man page: "Suspend, restart, terminate, clean, and migrate: Always successful." Whatever
    such a method exits with, the job keeps its own status and no queue is set in error."""
    for code in (0, 1, 2, 99, 100, 137, 255):
        row = exit_row(method, code)
        assert (row.job, row.queue_error) == (None, False)
        assert row.status == ("0" if code == 0 else "other")
        for level in ("node", "queue"):
            assert method_meaning(method, level, code) == (None, False)
            facts = ExitFacts(0, methods=((method, level, code),))
            assert outcome(facts) == (T.SUCCEED, False)
            assert queue_failure(facts) is None
    assert "Always successful." in exit_row(method, 1).seed


def test_gridengine_manpage_checkpoint_success_except_for_kernel_checkpointing() -> None:
    """The man page: "Checkpoint: Success, except for kernel checkpointing: checkpoint was not
    successful, did not happen (but migration will happen ...)": a failed checkpoint changes
    nothing for the job or its queue; the job runs on, and a migration still happens."""
    for code in (0, 1, 99, 100):
        row = exit_row("checkpoint", code)
        assert (row.job, row.queue_error) == (None, False)
        assert outcome(ExitFacts(0, methods=(("checkpoint", "node", code),))) == (T.SUCCEED, False)
    assert "except for kernel checkpointing" in exit_row("checkpoint", 1).seed


def test_the_cause_of_a_hold_in_error_is_the_row_that_held_it_and_says_whether_requeue_held_did() -> None:
    from drover.core.exit_status import error_hold_cause

    epilog_100 = ExitFacts(0, methods=(("epilog", "node", 100),))
    assert classify_exit(epilog_100) is T.ERROR_HOLD
    assert error_hold_cause(epilog_100) == ("the node epilog exited with status 100", False)
    queue_prolog_1 = ExitFacts(None, methods=(("prolog", "queue", 1),), requeue_held=True)
    assert classify_exit(queue_prolog_1) is T.ERROR_HOLD
    assert error_hold_cause(queue_prolog_1) == ("the queue prolog exited with status 1", True)
    assert error_hold_cause(ExitFacts(100)) == ("the job exited with status 100", False)
    postcmd = ExitFacts(0, methods=(("epilog", "job", 100),), epilog_sets_exit=True)
    assert classify_exit(postcmd) is T.ERROR_HOLD
    assert error_hold_cause(postcmd) == ("the job's epilog exited with status 100", False)
    unprepared = ExitFacts(None, failure="no space left", node_fault=True, requeue_held=True)
    assert classify_exit(unprepared) is T.ERROR_HOLD
    assert error_hold_cause(unprepared) == ("no space left", True)
