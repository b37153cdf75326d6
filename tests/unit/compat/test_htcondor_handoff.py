"""condor_submit's hand-over of its clusters to the user's one event log follower, on a
directory of the test's own: requests written whole, taken once, by the lock's holder only; a
directory someone else made is not used; the follower takes what later submits hand over
while it follows, and leaves the lock free when nothing is left."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from tests.helpers.wait import wait_until

from drover.compat.htcondor import follow, handoff
from drover.compat.htcondor.follow import Follower

SPEC = {"cluster": 12, "owner": "ann", "logs": {"0": "/nowhere/x.log"}, "iwds": {"0": "/"}, "sandbox": False,
        "staged_in": False, "request": {"cpus": 2, "memory_mb": 64}}


def test_the_directory_is_the_users_own_and_one_someone_else_made_is_passed_over(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planted, own = tmp_path / "run" / "drover", tmp_path / "tmp" / "drover-me"
    planted.parent.mkdir()
    planted.mkdir(mode=0o777)
    os.chown(planted, 65534, 65534)  # another user's
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(handoff, "pointer_dirs", lambda: [str(planted), str(own)])
    path = Path(handoff.directory())
    assert path == own / "htcondor-follow"
    assert (path.stat().st_mode & 0o777, own.stat().st_mode & 0o777) == (0o700, 0o700)
    assert handoff.tag("/other/api.sock") != handoff.tag("/var/lib/drover/api.sock")  # one per cluster
    monkeypatch.setattr(handoff, "pointer_dirs", lambda: [str(planted)])
    with pytest.raises(handoff.NoDirectory, match="belongs to"):
        handoff.directory()


def test_requests_are_taken_whole_and_once_and_what_is_not_one_is_dropped(tmp_path: Path) -> None:
    handoff.put(str(tmp_path), "t1.12", SPEC)
    handoff.put(str(tmp_path), "t1.13", {**SPEC, "cluster": 13})
    handoff.put(str(tmp_path), "t2.14", {**SPEC, "cluster": 14})  # another cluster's: its follower's
    (tmp_path / ".t1.15.999").write_text('{"cluster": 15')  # being written: not a request yet
    (tmp_path / "t1.16.json").write_text("not json")
    (tmp_path / "t1.17.json").symlink_to(tmp_path / "t1.12.json")
    assert handoff.pending(str(tmp_path), "t1")
    assert [r["cluster"] for r in handoff.take(str(tmp_path), "t1")] == [12, 13]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".t1.15.999", "t2.14.json"]
    assert handoff.take(str(tmp_path), "t1") == [] and not handoff.pending(str(tmp_path), "t1")
    assert handoff.pending(str(tmp_path), "t2")


def test_one_lock_holder_at_a_time_and_it_is_freed_when_its_holder_lets_go(tmp_path: Path) -> None:
    first, second = handoff.lock_file(str(tmp_path), "t1"), handoff.lock_file(str(tmp_path), "t1")
    other = handoff.lock_file(str(tmp_path), "t2")
    try:
        assert handoff.try_lock(first)
        assert not handoff.try_lock(second)  # a follower runs: a submit leaves its request to it
        assert handoff.try_lock(other)  # another cluster's follower is another lock's
        handoff.unlock(first)
        assert handoff.try_lock(second)
    finally:
        for fd in (first, second, other):
            os.close(fd)


def test_the_follower_takes_later_requests_while_it_follows_and_frees_the_lock_when_done(tmp_path: Path) -> None:
    path = str(tmp_path)
    handoff.put(path, "t1.12", SPEC)
    lock = handoff.lock_file(path, "t1")
    assert handoff.try_lock(lock)
    followed: list[tuple[int, int]] = []
    release = threading.Event()

    def fake(follower: Follower, grace: float) -> int:
        followed.append((follower.cluster, follower.request.cpus))
        if follower.cluster == 12:
            release.wait(10)  # still following 12 when 13 is handed over
        return 0

    server = threading.Thread(target=follow.serve, args=(path, "t1", lock, 0.01, fake))
    server.start()
    try:
        other = handoff.lock_file(path, "t1")
        assert not handoff.try_lock(other)  # held by the running follower: no second one
        handoff.put(path, "t1.13", {**SPEC, "cluster": 13, "request": {"cpus": 1}})
        os.close(other)
        wait_until(lambda: len(followed) == 2, timeout=10, describe="the later request taken by the same follower")
    finally:
        release.set()
        server.join(10)
    assert not server.is_alive() and followed == [(12, 2), (13, 1)]
    free = handoff.lock_file(path, "t1")
    assert handoff.try_lock(free)  # it let go when nothing was left
    os.close(free)
    os.close(lock)
