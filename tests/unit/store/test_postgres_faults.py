"""A PostgreSQL store whose connection is lost: the commit in flight fails as a StoreFault that
names the server and the cause, the next one opens a new connection, and the event log's
numbers go on from what was committed."""

from __future__ import annotations

import pytest

from drover.core.job import Task
from drover.core.job_state import JobState
from drover.store.base import Changes, open_store
from drover.store.faults import StoreFault


def a_start(n: int) -> Changes:
    changes = Changes()
    changes.task(Task(1, 0, JobState.RUNNING, float(n), 1))
    changes.event(float(n), "started", 1, 0, 1)
    return changes


def test_a_lost_connection_is_opened_again_and_nothing_committed_is_lost(postgres_url: str) -> None:
    import psycopg

    store = open_store(postgres_url)
    store.commit(a_start(1))
    with psycopg.connect(postgres_url, autocommit=True) as admin:  # as a server restart would
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE application_name = 'drover-controller'")
    with pytest.raises(StoreFault, match=r"the job store postgresql://drover@.* cannot be used: PostgreSQL"):
        store.commit(a_start(2))
    store.commit(a_start(3))
    assert [(seq, e.time) for seq, e in store.events_of(1, 0, 10)] == [(1, 1.0), (2, 3.0)]
    store.close()
