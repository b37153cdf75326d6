"""How a job with many tasks is summed up in one word and one exit status. Pure."""

from __future__ import annotations

from collections.abc import Mapping

# The first state present wins: a job is RUNNING while any task runs, PENDING while any waits,
# and once all are final, COMPLETED only if every task completed.
_ORDER = (
    "running", "suspended", "completing", "dispatched", "pending", "held",
    "failed", "out_of_memory", "timeout", "node_fail", "cancelled", "completed",
)


def job_state(task_counts: Mapping[str, int]) -> str:
    for state in _ORDER:
        if task_counts.get(state):
            return state
    return "completed"
