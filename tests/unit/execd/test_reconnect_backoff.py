"""The node's waits between tries to reach a controller, on plain data (the random draw given)."""

from __future__ import annotations

import pytest

from drover.execd.reconnect import Backoff


def waits(backoff: Backoff, refused: list[bool]) -> list[float]:
    return [round(backoff.after_failure(each), 4) for each in refused]


def test_failed_connects_double_from_50_ms_up_to_two_seconds() -> None:
    backoff = Backoff(longest_s=30.0, draw=lambda: 1.0)  # the top of each step
    assert waits(backoff, [False] * 8) == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
    assert max(waits(Backoff(longest_s=1.0, draw=lambda: 1.0), [False] * 8)) == 1.0


def test_a_refusal_starts_at_one_second() -> None:
    backoff = Backoff(longest_s=30.0, draw=lambda: 1.0)
    assert waits(backoff, [True] * 7) == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    backoff = Backoff(longest_s=30.0, draw=lambda: 1.0)
    assert waits(backoff, [False, False, True, False]) == [0.05, 0.1, 1.0, 2.0]
    backoff = Backoff(longest_s=30.0, draw=lambda: 1.0)  # refused, then no controller at all
    assert waits(backoff, [True] * 6 + [False]) == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 2.0]


def test_each_wait_is_drawn_from_the_upper_half_of_its_step() -> None:
    assert Backoff(draw=lambda: 0.0).after_failure(True) == 0.5
    assert Backoff(draw=lambda: 0.5).after_failure(True) == 0.75
    real = Backoff(longest_s=60.0)
    for _ in range(20):
        wait = real.after_failure(True)
        assert real.step / 2 <= wait <= real.step <= 60.0


def test_a_controller_that_takes_the_node_starts_the_waits_again() -> None:
    backoff = Backoff(longest_s=30.0, draw=lambda: 1.0)
    waits(backoff, [True] * 10)
    backoff.reset()
    assert waits(backoff, [False, False]) == [0.05, 0.1]


@pytest.mark.parametrize("longest", [1.0, 45.0])
def test_the_longest_wait_is_the_setting(longest: float) -> None:
    backoff = Backoff(longest_s=longest, draw=lambda: 0.999999)
    assert max(waits(backoff, [True] * 12)) == pytest.approx(longest, rel=1e-5)
