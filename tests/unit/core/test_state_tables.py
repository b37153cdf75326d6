"""The job and node state tables, exhaustively, and the exit meanings."""

from __future__ import annotations

import itertools

import pytest

from drover.core.errors import Conflict
from drover.core.exit_status import (
    GRID_ENGINE,
    PLAIN,
    ExitFacts,
    ExitSemantics,
    classify_exit,
    shell_status,
)
from drover.core.job_state import (
    FINAL_STATES,
    TRANSITIONS,
    IllegalTransition,
    JobState,
    Trigger,
    next_state,
)
from drover.core.node_state import NODE_TRANSITIONS, NodeState, NodeTrigger, next_node_state

S, T = JobState, Trigger

EXPECTED = {
    (S.PENDING, T.HOLD): S.HELD,
    (S.HELD, T.RELEASE): S.PENDING,
    (S.PENDING, T.DISPATCH): S.DISPATCHED,
    (S.DISPATCHED, T.START): S.RUNNING,
    (S.RUNNING, T.SUSPEND): S.SUSPENDED,
    (S.SUSPENDED, T.RESUME): S.RUNNING,
    (S.DISPATCHED, T.EXIT): S.COMPLETING,
    (S.RUNNING, T.EXIT): S.COMPLETING,
    (S.SUSPENDED, T.EXIT): S.COMPLETING,
    (S.COMPLETING, T.REQUEUE): S.PENDING,
    (S.COMPLETING, T.ERROR_HOLD): S.HELD,
    (S.COMPLETING, T.HOLD): S.HELD,  # held while its prolog ran: stopped, then held
    (S.COMPLETING, T.SUCCEED): S.COMPLETED,
    (S.COMPLETING, T.FAIL): S.FAILED,
    (S.COMPLETING, T.TIME_OUT): S.TIMEOUT,
    (S.COMPLETING, T.RUN_OUT_OF_MEMORY): S.OUT_OF_MEMORY,
    (S.COMPLETING, T.CANCEL): S.CANCELLED,
    (S.PENDING, T.CANCEL): S.CANCELLED,
    (S.HELD, T.CANCEL): S.CANCELLED,
    (S.DISPATCHED, T.LOSE_NODE): S.NODE_FAIL,
    (S.RUNNING, T.LOSE_NODE): S.NODE_FAIL,
    (S.SUSPENDED, T.LOSE_NODE): S.NODE_FAIL,
    (S.COMPLETING, T.LOSE_NODE): S.NODE_FAIL,
    **{(state, T.INTERNAL_ERROR): S.FAILED for state in (S.PENDING, S.HELD, S.DISPATCHED, S.RUNNING, S.SUSPENDED,
                                                         S.COMPLETING)},
}


@pytest.mark.parametrize(("state", "trigger"), list(itertools.product(JobState, Trigger)))
def test_every_state_and_trigger_either_moves_as_tabled_or_is_refused(state: JobState, trigger: Trigger) -> None:
    expected = EXPECTED.get((state, trigger))
    if expected is not None:
        assert next_state(state, trigger) is expected
    else:
        with pytest.raises(IllegalTransition) as refused:
            next_state(state, trigger)
        allowed = sorted(t.value for (s, t) in EXPECTED if s is state)
        assert f"a {state.value} task cannot {trigger.value}" in str(refused.value)
        assert (", ".join(allowed) or "nothing (final state)") in str(refused.value)
        assert isinstance(refused.value, Conflict)


def test_the_table_is_exactly_the_expected_one() -> None:
    assert TRANSITIONS == EXPECTED


def reachable(start: object, table: dict[tuple[object, object], object]) -> set[object]:
    seen, frontier = {start}, [start]
    while frontier:
        state = frontier.pop()
        for (source, _), target in table.items():
            if source is state and target not in seen:
                seen.add(target)
                frontier.append(target)
    return seen


def test_final_states_have_no_exits_and_every_other_state_can_reach_one() -> None:
    for state in FINAL_STATES:
        assert not [t for (s, t) in TRANSITIONS if s is state]
    for start in JobState:
        assert reachable(start, TRANSITIONS) & FINAL_STATES, f"{start} cannot reach a final state"


@pytest.mark.parametrize(("state", "trigger"), list(itertools.product(NodeState, NodeTrigger)))
def test_node_states_move_only_as_tabled(state: NodeState, trigger: NodeTrigger) -> None:
    if (state, trigger) in NODE_TRANSITIONS:
        assert next_node_state(state, trigger) is NODE_TRANSITIONS[state, trigger]
    else:
        with pytest.raises(Conflict, match=f"a {state.value} node cannot {trigger.value}"):
            next_node_state(state, trigger)


def test_only_an_up_node_accepts_work_and_every_node_state_can_get_back_up() -> None:
    assert [s for s in NodeState if s.accepts_work] == [NodeState.UP]
    for start in NodeState:
        assert NodeState.UP in reachable(start, NODE_TRANSITIONS)


GE = GRID_ENGINE


@pytest.mark.parametrize(
    ("facts", "semantics", "trigger"),
    [
        (ExitFacts(0), GE, T.SUCCEED),
        (ExitFacts(1), GE, T.FAIL),
        (ExitFacts(2), GE, T.FAIL),
        (ExitFacts(99), GE, T.REQUEUE),
        (ExitFacts(100), GE, T.ERROR_HOLD),
        (ExitFacts(99), PLAIN, T.FAIL),
        (ExitFacts(100), PLAIN, T.FAIL),
        (ExitFacts(0), PLAIN, T.SUCCEED),
        (ExitFacts(None, signal=9), GE, T.FAIL),
        (ExitFacts(None, failure="cannot enter /x: No such file or directory"), GE, T.FAIL),
        (ExitFacts(0, failure="odd"), GE, T.FAIL),
        (ExitFacts(0, timed_out=True), GE, T.TIME_OUT),
        (ExitFacts(None, signal=15, timed_out=True), GE, T.TIME_OUT),
        (ExitFacts(0, out_of_memory=True), GE, T.RUN_OUT_OF_MEMORY),
        (ExitFacts(0, cancel_requested=True), GE, T.CANCEL),
        (ExitFacts(99, cancel_requested=True), GE, T.CANCEL),
        (ExitFacts(None, signal=9, timed_out=True, out_of_memory=True, cancel_requested=True), GE, T.CANCEL),
        (ExitFacts(None, timed_out=True, out_of_memory=True), GE, T.TIME_OUT),
        (ExitFacts(None, out_of_memory=True, failure="x"), GE, T.RUN_OUT_OF_MEMORY),
    ],
)
def test_exit_meanings_in_order_of_precedence(facts: ExitFacts, semantics: ExitSemantics, trigger: Trigger) -> None:
    assert classify_exit(facts, semantics) is trigger


def test_every_exit_trigger_is_legal_from_completing() -> None:
    for facts in (ExitFacts(0), ExitFacts(3), ExitFacts(99), ExitFacts(100), ExitFacts(None, timed_out=True),
                  ExitFacts(0, out_of_memory=True), ExitFacts(0, cancel_requested=True)):
        next_state(JobState.COMPLETING, classify_exit(facts))


def test_shell_status_is_the_exit_code_or_128_plus_the_signal() -> None:
    assert shell_status(0, None) == 0
    assert shell_status(3, None) == 3
    assert shell_status(None, 9) == 137
    assert shell_status(None, None) == 1


from drover.core.exit_status import (  # noqa: E402
    EXIT_TABLE,
    effective_exit_code,
    method_meaning,
    queue_failure,
)


@pytest.mark.parametrize(("step", "level"), [(row.method, level) for row in EXIT_TABLE if row.method != "job"
                                             for level in ("node", "queue")])
def test_each_site_method_means_what_the_exit_table_says(step: str, level: str) -> None:
    """Every status of every site method, as its row of the table says (tests/unit/core/test_exit_table.py has
    one test per row)."""
    for code in (0, 1, 99, 100):
        meaning, queue_error = method_meaning(step, level, code)
        facts = ExitFacts(0 if meaning is None else None, methods=((step, level, code),))
        assert classify_exit(facts) is (meaning or T.SUCCEED)
        assert (queue_failure(facts) is not None) is queue_error
        if meaning is T.REQUEUE and queue_error:
            held = ExitFacts(None, methods=((step, level, code),), requeue_held=True)
            assert classify_exit(held) is T.ERROR_HOLD


def test_the_job_epilog_status_is_the_jobs_only_when_asked() -> None:
    ran = ExitFacts(0, methods=(("epilog", "job", 4),))
    assert classify_exit(ran) is T.SUCCEED and effective_exit_code(ran) == 0
    asked = ExitFacts(0, methods=(("epilog", "job", 4),), epilog_sets_exit=True)
    assert classify_exit(asked) is T.FAIL and effective_exit_code(asked) == 4
    rescued = ExitFacts(3, methods=(("epilog", "job", 0),), epilog_sets_exit=True)
    assert classify_exit(rescued) is T.SUCCEED


def test_a_cancelled_job_stays_cancelled_whatever_its_methods_did() -> None:
    assert classify_exit(ExitFacts(None, cancel_requested=True, methods=(("prolog", "node", 1),))) is T.CANCEL


def test_a_requested_requeue_comes_after_a_cancel_and_before_everything_else() -> None:
    assert classify_exit(ExitFacts(None, signal=15, requeue_requested=True)) is T.REQUEUE
    assert classify_exit(ExitFacts(None, cancel_requested=True, requeue_requested=True)) is T.CANCEL
    assert classify_exit(ExitFacts(0, timed_out=True, requeue_requested=True)) is T.REQUEUE


def test_a_hold_while_the_prolog_ran_holds_after_a_cancel_and_before_a_requeue() -> None:
    stopped = ExitFacts(None, failure="stopped before the job started (a hold came during its prolog)",
                        hold_requested=True)
    assert classify_exit(stopped) is T.HOLD
    assert classify_exit(ExitFacts(None, cancel_requested=True, hold_requested=True)) is T.CANCEL
    assert classify_exit(ExitFacts(None, hold_requested=True, requeue_requested=True)) is T.HOLD
    # a failing node prolog still sets the queue in error on the node; the task waits held all the same
    prolog_failed = ExitFacts(None, methods=(("prolog", "node", 1),), hold_requested=True)
    assert classify_exit(prolog_failed) is T.HOLD and queue_failure(prolog_failed) is not None
    assert next_state(S.COMPLETING, T.HOLD) is S.HELD and next_state(S.HELD, T.RELEASE) is S.PENDING
