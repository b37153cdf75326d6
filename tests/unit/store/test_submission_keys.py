"""A submission's request key is committed with its jobs, on both backends: a controller that
starts on the store (after a restart, or taking over from another) knows the keys of the newest
submissions, so a submission sent again gets the first one's ids and makes no second job. The
newest keys are kept, the older pruned."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from drover.controller.service import ControllerService, Settings
from drover.controller.upkeep import purges
from drover.protocol.api import JobSubmission
from drover.store.base import Changes, SubmissionKey, open_store
from drover.store.sql_store import Db, SqlStore

NOW = 1_790_000_000.0
KEY = "k-0123456789"


def in_loop(action: Callable[[], Any]) -> Any:
    async def run() -> Any:
        return action()

    return asyncio.run(run())


def held() -> JobSubmission:
    return JobSubmission(script="true\n", workdir="/tmp", hold=True)


def controller(url: str) -> ControllerService:
    return in_loop(lambda: ControllerService(open_store(url), Settings(), clock=lambda: NOW))


def stored_keys(store: Any) -> list[tuple[Any, ...]]:
    assert isinstance(store, SqlStore)
    return [tuple(row) for row in store.db.execute(
        "SELECT owner, request_key, job_ids FROM submission_keys ORDER BY owner, request_key", ())]


def test_a_key_outlives_the_controller_that_took_its_submission(store_url: str) -> None:
    first = controller(store_url)
    ids = in_loop(lambda: first.submit([held(), held()], "alice", KEY))
    in_loop(lambda: first.submit([held()], "alice"))  # no key: nothing kept
    assert stored_keys(first.store) == [("alice", KEY, f"[{ids[0]},{ids[1]}]")]
    first.store.close()  # the controller is gone; its memory with it

    second = controller(store_url)
    try:
        assert in_loop(lambda: second.submit([held(), held()], "alice", KEY)) == ids
        assert len(second.state.jobs) == 3  # no second copy
        other = in_loop(lambda: second.submit([held()], "bob", KEY))  # a key is its owner's
        assert other == [4] and len(second.state.jobs) == 4
    finally:
        second.store.close()


def test_a_submission_whose_commit_fails_leaves_no_key(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    service = controller(store_url)
    store = service.store
    assert isinstance(store, SqlStore)
    write = store._write

    def written_then_failed(db: Db, changes: Changes, first_seq: int) -> None:
        write(db, changes, first_seq)  # the key's row too: rolled back with the jobs
        raise OverflowError("Python int too large to convert to SQLite INTEGER")

    monkeypatch.setattr(store, "_write", written_then_failed)
    with pytest.raises(OverflowError):
        in_loop(lambda: service.submit([held()], "alice", KEY))
    monkeypatch.undo()
    assert stored_keys(store) == [] and ("alice", KEY) not in service._submitted
    assert in_loop(lambda: service.submit([held()], "alice", KEY)) == [1]  # sent again: taken now, once
    assert in_loop(lambda: service.submit([held()], "alice", KEY)) == [1]
    assert stored_keys(store) == [("alice", KEY, "[1]")] and len(service.state.jobs) == 1
    store.close()


def test_the_newest_keys_are_loaded_oldest_first_and_the_older_pruned(store_url: str) -> None:
    store = open_store(store_url)
    try:
        for n in range(30):
            store.commit(Changes(submissions=[SubmissionKey(f"user{n % 3}", f"key-{n:04}", (n + 1,), NOW + n)]))
        assert [k.key for k in store.recent_submissions(4)] == ["key-0026", "key-0027", "key-0028", "key-0029"]
        assert store.recent_submissions(1) == [SubmissionKey("user2", "key-0029", (30,), NOW + 29)]
        assert store.prune_submissions(10) == 20
        assert [k.key for k in store.recent_submissions(100)] == [f"key-{n:04}" for n in range(20, 30)]
        assert store.prune_submissions(10) == 0
        # A key sent again once it was no longer remembered names the newer submission.
        store.commit(Changes(submissions=[SubmissionKey("user2", "key-0029", (31, 32), NOW + 30)]))
        assert store.recent_submissions(1) == [SubmissionKey("user2", "key-0029", (31, 32), NOW + 30)]
        assert len(store.recent_submissions(100)) == 10
    finally:
        store.close()


def test_the_controller_prunes_the_keys_it_no_longer_remembers(store_url: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(purges, "REMEMBERED_SUBMISSIONS", 3)
    ticks = iter(NOW + n for n in range(1000))  # each submission a second after the one before

    def tick() -> float:
        return next(ticks)

    service = in_loop(lambda: ControllerService(open_store(store_url), Settings(), clock=tick))
    try:
        def submit(key: str) -> list[int]:
            return list(in_loop(lambda: service.submit([held()], "alice", key)))

        ids = [submit(f"key-{n:04}") for n in range(5)]
        assert service.prune_submissions() == 2
        assert [k for _, k, _ in stored_keys(service.store)] == ["key-0002", "key-0003", "key-0004"]
        assert len(service._submitted) == 3 and ("alice", "key-0001") not in service._submitted
    finally:
        service.store.close()
    again = in_loop(lambda: ControllerService(open_store(store_url), Settings(), clock=tick))
    try:
        assert list(again._submitted) == [("alice", f"key-{n:04}") for n in (2, 3, 4)]
        assert in_loop(lambda: again.submit([held()], "alice", "key-0004")) == ids[4]
    finally:
        again.store.close()
