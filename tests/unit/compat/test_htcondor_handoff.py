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


def test_one_lock_holder_at_a_time_and_an_ending_follower_leaves_nothing_behind(tmp_path: Path) -> None:
    path = str(tmp_path)
    follower = handoff.claim(path, "t1")
    assert follower is not None  # no follower ran: the submit starts one with this lock
    assert handoff.claim(path, "t1") is None  # one runs: a submit leaves its request to it
    other = handoff.claim(path, "t2")  # another cluster's follower is another lock's
    assert other is not None
    early = handoff.lock_file(path, "t1")  # a submit opens the lock file just before the follower ends...
    assert handoff.retire(path, "t1", follower) is None  # nothing waited: it ends, its lock file gone
    assert not (tmp_path / "lock.t1").exists()
    assert handoff.try_lock(early)  # ...and may lock the removed file: claim opens the name again
    fresh = handoff.claim(path, "t1")
    assert fresh is not None and (tmp_path / "lock.t1").exists()
    handoff.put(path, "t1.12", SPEC)  # a request that came while the follower was ending: claimed anew
    again = handoff.retire(path, "t1", fresh)
    assert again is not None and handoff.claim(path, "t1") is None
    for fd in (early, again, other):
        os.close(fd)
    assert handoff.claim(path, "t1") is not None  # closed: free


def test_the_follower_takes_later_requests_while_it_follows_and_frees_the_lock_when_done(tmp_path: Path) -> None:
    path = str(tmp_path)
    handoff.put(path, "t1.12", SPEC)
    lock = handoff.claim(path, "t1")
    assert lock is not None
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
        handoff.put(path, "t1.13", {**SPEC, "cluster": 13, "request": {"cpus": 1}})
        assert handoff.claim(path, "t1") is None  # held by the running follower: no second one
        wait_until(lambda: len(followed) == 2, timeout=10, describe="the later request taken by the same follower")
    finally:
        release.set()
        server.join(10)
    assert not server.is_alive() and followed == [(12, 2), (13, 1)]
    assert os.listdir(path) == []  # it let go when nothing was left, and left nothing behind


def test_the_follower_sleeps_until_a_request_comes_or_a_cluster_ends(tmp_path: Path) -> None:
    """No look at the directory between two requests (the fallback look is an hour away): the
    next request wakes the follower, and so does the end of the last cluster it follows."""
    path = str(tmp_path)
    handoff.put(path, "t1.12", SPEC)
    lock = handoff.claim(path, "t1")
    assert lock is not None
    followed: list[int] = []
    releases = {12: threading.Event(), 13: threading.Event()}

    def fake(follower: Follower, grace: float) -> int:
        followed.append(follower.cluster)
        releases[follower.cluster].wait(30)
        return 0

    server = threading.Thread(target=follow.serve, args=(path, "t1", lock, 3600, fake))
    server.start()
    try:
        wait_until(lambda: followed == [12], timeout=10, describe="the first request taken")
        handoff.put(path, "t1.13", {**SPEC, "cluster": 13})
        wait_until(lambda: followed == [12, 13], timeout=10, describe="the later request taken at once")
        releases[12].set()
        releases[13].set()
        server.join(10)
        assert not server.is_alive(), "the follower did not end with its last cluster"
    finally:
        for release in releases.values():
            release.set()
        server.join(10)
    assert os.listdir(path) == []


def test_without_a_watch_the_follower_looks_at_the_directory_now_and_then(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from drover.compat.htcondor import wakeup

    monkeypatch.setattr(wakeup, "_watch", lambda path: None)  # the user's inotify instances used up
    unwatched = wakeup.Wakeup(str(tmp_path), 1)
    assert not unwatched.watching
    unwatched.close()
    test_the_follower_takes_later_requests_while_it_follows_and_frees_the_lock_when_done(tmp_path)


def test_the_watch_is_not_set_through_a_link(tmp_path: Path) -> None:
    from drover.compat.htcondor import wakeup

    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    real, link = wakeup.Wakeup(str(tmp_path / "real"), 1), wakeup.Wakeup(str(tmp_path / "link"), 1)
    assert real.watching and not link.watching
    real.close()
    link.close()
