"""A queue's owner, an ordinary user, gives a reason that would write on other users' terminals
(an escape sequence): the installed `drover` refuses it in plain words and exits non-zero,
nothing of the queue changes, and another user's listings show no escape. A plain reason of
hers does reach his listings: that is where an escape would have gone."""

from __future__ import annotations

from collections.abc import Callable

from tests.helpers.system_cluster import SystemCluster
from tests.helpers.wait import wait_until

ESCAPES = ["\x1b[31mX", "\x1b]0;owned\x07", "maintenance\x1b[2J\x1b[Hall jobs cancelled", "csi\x9b31m"]
PLAIN = "a reason is one line of at most 1000 printable characters"


def test_a_queue_owners_reason_with_an_escape_is_refused_in_plain_words_and_reaches_no_one(
        system_cluster_factory: Callable[..., SystemCluster], users: tuple[str, str]) -> None:
    alice, bob = users
    cluster = system_cluster_factory(config_toml="[controller]\nuser_queues = true\n")
    made = cluster.run_as(alice, "drover", "queue", "create", "alices")
    assert made.returncode == 0, made.stderr
    for reason in ESCAPES:
        for verb in ("stop", "drain", "suspend"):
            refused = cluster.run_as(alice, "drover", "queue", verb, "alices", "--reason", reason)
            assert refused.returncode != 0, (verb, reason, refused.stdout)
            assert PLAIN in refused.stderr, (verb, reason, refused.stderr)
            assert "regex" not in refused.stderr and "\x1b" not in refused.stderr + refused.stdout
    listed = cluster.run_as(bob, "drover", "queue", "list")
    assert listed.returncode == 0, listed.stderr
    (row,) = [line for line in listed.stdout.splitlines() if line.split()[:1] == ["alices"]]
    assert "OPEN" in row.upper() and "STOPPED" not in row.upper() and "SUSPENDED" not in row.upper(), row
    # Nothing changed: bob's job in her queue starts and ends as ever.
    ran = cluster.submit_as(bob, "-q", "alices", "--", "true")
    assert cluster.wait_ended(ran)["state"] == "completed"

    # Her plain reason reaches bob's listings: where an escape would have gone.
    stopped = cluster.run_as(alice, "drover", "queue", "stop", "alices", "--reason", "moving racks")
    assert stopped.returncode == 0, stopped.stderr
    waiting = cluster.submit_as(bob, "-q", "alices", "--", "true")
    wait_until(lambda: "moving racks" in cluster.run_as(bob, "drover", "queue", "list").stdout,
               describe="the stop's reason in bob's queue list")
    shown = [cluster.run_as(bob, "drover", *argv) for argv in (("queue", "list"), ("queue", "show", "alices"),
                                                                ("status",), ("why", str(waiting)),
                                                                ("show", str(waiting)))]
    for result in shown:
        assert result.returncode == 0, (result.args, result.stderr)
        assert "\x1b" not in result.stdout + result.stderr and "\x9b" not in result.stdout + result.stderr
    assert "moving racks" in shown[1].stdout
    assert cluster.run_as(bob, "drover", "cancel", str(waiting)).returncode == 0
