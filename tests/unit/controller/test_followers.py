"""Who follows whom (controller/followers.py): each node's count of followed attempts is kept as
promises are made, kept and given up, so a planning pass reads it without walking them."""

from __future__ import annotations

from drover.controller.followers import Followers, fast_attempt_key


def test_each_nodes_count_follows_its_promises_as_they_come_and_go() -> None:
    followers = Followers()
    followers.add((1, 0, 1), (2, 0, 1), "n1")
    followers.add((3, 0, 1), (4, 0, 1), "n1")
    followers.add((5, 0, 1), (6, 0, 1), "n2")
    assert (followers.followed_on("n1"), followers.followed_on("n2"), followers.followed_on("n3")) == (2, 1, 0)
    assert followers.pop((1, 0, 1)) == (2, 0, 1)
    assert followers.pop((1, 0, 1)) is None  # given up once only
    assert followers.followed_on("n1") == 1
    followers.add((3, 0, 1), (7, 0, 1), "n1")  # another follower in its place: still one
    assert followers.followed_on("n1") == 1 and followers.get((3, 0, 1)) == (7, 0, 1)
    assert followers.as_dict() == {(3, 0, 1): (7, 0, 1), (5, 0, 1): (6, 0, 1)}
    followers.clear()
    assert not followers and followers.followed_on("n2") == 0


def test_an_attempts_name_is_its_key() -> None:
    assert fast_attempt_key("12.3.2") == (12, 3, 2)
    assert fast_attempt_key("12.3") is None and fast_attempt_key("12.x.2") is None
