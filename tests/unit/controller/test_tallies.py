"""What the controller counts from each commit the store took (controller/tallies.py): attempts
started, ended by what ended them, requeued; cleanup steps that failed; and the histograms'
buckets."""

from __future__ import annotations

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
