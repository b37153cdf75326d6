"""What the controller counts from each commit the store took (controller/tallies.py): attempts
started, ended by what ended them, requeued; cleanup steps that failed; and the histograms'
buckets."""

from __future__ import annotations

from collections.abc import Callable

from drover.controller.tallies import Histogram, Tallies
from drover.store.base import Changes


def transition(changes: Changes, kind: str, trigger: str, before: str, after: str) -> None:
    changes.event(1.0, kind, 7, 0, 1, trigger=trigger, before=before, after=after)


def test_a_commit_counts_the_attempts_it_started_and_ended() -> None:
    tallies = Tallies()
    changes = Changes()
    transition(changes, "dispatched", "dispatch", "pending", "dispatched")
    transition(changes, "started", "start", "dispatched", "running")
    transition(changes, "exited", "exit", "running", "completing")  # not ended yet: cleaning up
    transition(changes, "completed", "succeed", "completing", "completed")
    transition(changes, "requeued", "requeue", "completing", "pending")
    transition(changes, "node_failed", "lose_node", "running", "node_fail")
    transition(changes, "held", "hold", "pending", "held")  # no attempt lived: not an end
    changes.event(1.0, "cancelled", 8, trigger="cancel", before="pending", after="cancelled", tasks=40)
    changes.event(1.0, "cleanup_failed", 7, 0, 1, step="epilog", tries=2, error="exit 1")
    changes.event(1.0, "node_connected", node="n1")
    tallies.committed(changes, 0.002)
    assert tallies.commits == 1
    assert tallies.attempts_started == 1
    assert tallies.attempts_ended == {"completed": 1, "requeued": 1, "node_failed": 1}
    assert tallies.requeued == 1
    assert tallies.cleanup_failures == {"epilog": 1}
    assert (tallies.commit_seconds.count, tallies.commit_seconds.sum) == (1, 0.002)


def test_a_histogram_counts_each_observation_in_the_first_bucket_that_holds_it() -> None:
    histogram = Histogram((0.1, 1.0))
    for value in (0.05, 0.1, 0.5, 3.0):
        histogram.observe(value)
    assert histogram.cumulative() == [(0.1, 2), (1.0, 3), (float("inf"), 4)]
    assert histogram.count == 4 and histogram.sum == 3.65


# -- a promised attempt, whichever way it goes: started and ended balance ------------------------

def promised(changes: Changes) -> None:
    """Attempt 7.0.1 promised behind 6.0.1: dispatched, not started."""
    changes.event(1.0, "dispatched", 7, 0, 1, trigger="dispatch", before="pending", after="dispatched",
                  promised_behind="6.0.1")


def counted(*batches: Callable[[Changes], None]) -> Tallies:
    """The tallies after one commit for each batch of events."""
    tallies = Tallies()
    for batch in batches:
        changes = Changes()
        batch(changes)
        tallies.committed(changes, 0.001)
    return tallies


def started_and_completed(changes: Changes) -> None:
    changes.event(1.0, "started", 7, 0, 1, trigger="start", before="dispatched", after="running", promised=True)
    transition(changes, "exited", "exit", "running", "completing")
    transition(changes, "completed", "succeed", "completing", "completed")


def test_a_promised_attempt_is_counted_started_when_its_node_starts_it() -> None:
    assert counted(promised).attempts_started == 0  # shown pending: not started
    tallies = counted(promised, started_and_completed)
    assert tallies.attempts_started == 1 and tallies.attempts_ended == {"completed": 1}


def test_a_promise_taken_back_is_counted_neither_started_nor_ended() -> None:
    def taken_back(changes: Changes) -> None:
        transition(changes, "exited", "exit", "dispatched", "completing")
        changes.event(1.0, "requeued", 7, 0, 1, trigger="requeue", before="completing", after="pending",
                      promise_unstarted=True)

    tallies = counted(promised, taken_back)
    assert (tallies.attempts_started, sum(tallies.attempts_ended.values()), tallies.requeued) == (0, 0, 0)


def test_a_promised_attempt_that_fails_to_set_up_is_counted_started_and_ended() -> None:
    def set_up_failed(changes: Changes) -> None:  # its node reports its end, never its start
        transition(changes, "exited", "exit", "dispatched", "completing")
        transition(changes, "failed", "fail", "completing", "failed")

    tallies = counted(promised, set_up_failed)
    assert tallies.attempts_started == 1 and tallies.attempts_ended == {"failed": 1}


def test_a_promise_started_in_place_is_counted_once_as_it_starts() -> None:
    def moved(changes: Changes) -> None:
        changes.event(1.0, "promise_started_in_place", 7, 0, 1, node="n1", cpu_ids=[1], instead_of="6.0.1")

    def started(changes: Changes) -> None:
        changes.event(1.0, "started", 7, 0, 1, trigger="start", before="dispatched", after="running", promised=True)

    def ended(changes: Changes) -> None:
        transition(changes, "exited", "exit", "running", "completing")
        transition(changes, "completed", "succeed", "completing", "completed")

    tallies = counted(promised, moved, started, ended)
    assert tallies.attempts_started == 1 and tallies.attempts_ended == {"completed": 1}


def test_a_promise_lost_with_its_node_is_counted_started_and_ended() -> None:
    def lost(changes: Changes) -> None:
        transition(changes, "exited", "exit", "dispatched", "completing")
        transition(changes, "requeued", "requeue", "completing", "pending")

    tallies = counted(promised, lost)
    assert tallies.attempts_started == 1 and tallies.attempts_ended == {"requeued": 1} and tallies.requeued == 1
    tallies = counted(promised, lambda c: transition(c, "node_failed", "lose_node", "dispatched", "node_fail"))
    assert tallies.attempts_started == 1 and tallies.attempts_ended == {"node_failed": 1}


def test_a_promised_attempt_whose_job_the_controller_fails_is_counted_started_and_ended() -> None:
    tallies = counted(promised, lambda c: transition(c, "failed", "internal_error", "dispatched", "failed"))
    assert tallies.attempts_started == 1 and tallies.attempts_ended == {"failed": 1}


def test_a_promise_made_before_the_controller_started_is_counted_as_it_starts() -> None:
    started = counted(lambda c: c.event(1.0, "started", 7, 0, 1, trigger="start", before="dispatched",
                                        after="running", promised=True))
    assert started.attempts_started == 1
    plain = counted(lambda c: transition(c, "started", "start", "dispatched", "running"))
    assert plain.attempts_started == 0  # dispatched to start now: counted at its dispatch
