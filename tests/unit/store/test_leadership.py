"""Two controllers' stores on one PostgreSQL database: the first holds the leadership, the second
waits for it in the server and is granted it the moment the first's session ends; the store
names the holder (never a dead one); a holder cut off takes the lock again only while no one
else took it, and one that lost it never commits again. The event numbers go on after a
takeover."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from drover.core.job import Task
from drover.core.job_state import JobState
from drover.store.base import Changes
from drover.store.faults import StoreFault
from drover.store.leadership import Leadership, LeadershipLost, active
from drover.store.postgres import PostgresStore, connect


def an_event(n: int) -> Changes:
    changes = Changes()
    changes.task(Task(1, 0, JobState.RUNNING, float(n), 1))
    changes.event(float(n), "started", 1, 0, 1)
    return changes


def terminate(url: str, store: PostgresStore) -> None:
    """End a store's session from outside, as an admin's pg_terminate_backend would."""
    backend = store.connection.info.backend_pid
    with connect(url, "test-admin") as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (backend,))


@pytest.fixture
def stores(postgres_url: str) -> Iterator[list[PostgresStore]]:
    made: list[PostgresStore] = []
    yield made
    for store in made:
        store.close()


def standby(url: str, address: str, stores: list[PostgresStore]) -> threading.Thread:
    """A second controller's store, opened in a thread: it waits for the leadership."""
    def open_it() -> None:
        stores.append(PostgresStore(url, Leadership(address)))

    thread = threading.Thread(target=open_it, daemon=True)
    thread.start()
    return thread


def test_the_second_waits_and_takes_over_when_the_first_session_ends(postgres_url: str,
                                                                    stores: list[PostgresStore]) -> None:
    first = PostgresStore(postgres_url, Leadership("https://a:7443"))
    stores.append(first)
    first.commit(an_event(1))
    first.commit(an_event(2))
    with connect(postgres_url, "test") as reader:
        assert active(reader) is not None and active(reader).address == "https://a:7443"  # type: ignore[union-attr]
        waiting = standby(postgres_url, "https://b:7443", stores)
        waiting.join(1.0)
        assert waiting.is_alive(), "the second controller took the lock while the first held it"

        terminate(postgres_url, first)
        waiting.join(10.0)
        assert not waiting.is_alive()
        second = stores[1]
        holder = active(reader)
        assert holder is not None and holder.address == "https://b:7443" and holder.epoch == 2
    # The event numbers go on from the store's: the new holder read them once it held the lock.
    changes = an_event(3)
    second.commit(changes)
    assert changes.events[0].seq == 3

    # The first is cut off: its next call finds its connection gone (nothing is committed), the
    # one after finds another controller holding the lock.
    with pytest.raises(StoreFault, match="cannot be used"):
        first.commit(an_event(4))
    with pytest.raises(LeadershipLost, match="another controller"):
        first.commit(an_event(4))
    with pytest.raises(LeadershipLost):  # and stays so, without asking the server again
        first.commit(an_event(4))
    assert [seq for seq, _ in second.events_of(None, 0, 100)] == [1, 2, 3]


def test_a_holder_cut_off_takes_the_lock_again_while_no_one_else_did(postgres_url: str,
                                                                    stores: list[PostgresStore]) -> None:
    first = PostgresStore(postgres_url, Leadership("https://a:7443"))
    stores.append(first)
    terminate(postgres_url, first)
    with pytest.raises(StoreFault):  # the call in flight fails
        first.check()
    first.commit(an_event(1))  # a new connection, the same epoch
    with connect(postgres_url, "test") as reader:
        holder = active(reader)
        assert holder is not None and holder.epoch == 1


def test_a_holder_whose_epoch_passed_stops_even_if_the_lock_is_free(postgres_url: str,
                                                                   stores: list[PostgresStore]) -> None:
    """Another controller was active while this one was cut off, and is gone too: what this one
    keeps in memory is out of date, so it must not take the lock again."""
    first = PostgresStore(postgres_url, Leadership("https://a:7443"))
    stores.append(first)
    waiting = standby(postgres_url, "https://b:7443", stores)
    terminate(postgres_url, first)
    waiting.join(10.0)
    second = stores[1]
    second.close()
    stores.remove(second)
    with pytest.raises(StoreFault):  # its connection is gone
        first.check()
    with pytest.raises(LeadershipLost, match="epoch 1 → 2"):
        first.check()


def test_a_waiting_controller_can_be_stopped(postgres_url: str, stores: list[PostgresStore]) -> None:
    stores.append(PostgresStore(postgres_url, Leadership("https://a:7443")))
    leadership = Leadership("https://b:7443")
    failed: list[BaseException] = []

    def open_it() -> None:
        try:
            stores.append(PostgresStore(postgres_url, leadership))
        except BaseException as error:  # noqa: BLE001 - the test reads it
            failed.append(error)

    thread = threading.Thread(target=open_it, daemon=True)
    thread.start()
    thread.join(0.5)
    leadership.cancel()
    thread.join(10.0)
    assert not thread.is_alive() and failed and len(stores) == 1
