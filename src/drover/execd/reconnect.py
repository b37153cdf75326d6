"""How long a node waits before it tries to reach a controller again: the wait doubles after
each round of addresses that found no controller to take the channel, from `FIRST_S` after
failed connects, up to `UNREACHABLE_LONGEST_S` (a connect no one answers costs no controller
anything, and a node must be back soon after its controller restarts or fails over), and from
`FIRST_AFTER_REFUSAL_S` once a controller refused the node (a certificate under another name,
one revoked: asking again at once changes nothing and costs the controller a refusal each
time), up to `longest_s`. Each wait is drawn at random from the
upper half of its step, so that nodes refused or cut off together do not come back together.
Once a controller takes the node, the next wait starts from the beginning. Pure: the random
draw is passed in."""

from __future__ import annotations

import random
from collections.abc import Callable

FIRST_S = 0.05
FIRST_AFTER_REFUSAL_S = 1.0
UNREACHABLE_LONGEST_S = 2.0


class Backoff:
    def __init__(self, longest_s: float = 30.0, draw: Callable[[], float] = random.random) -> None:
        self.longest_s = longest_s
        self.draw = draw  # uniform in [0, 1)
        self.step = 0.0  # the last wait's upper bound; 0 until a round fails

    def after_failure(self, refused: bool) -> float:
        """The wait after a round that found no controller; `refused`: one refused the node."""
        floor = FIRST_AFTER_REFUSAL_S if refused else FIRST_S
        longest = self.longest_s if refused else min(self.longest_s, UNREACHABLE_LONGEST_S)
        self.step = min(longest, max(floor, self.step * 2))
        return self.step * (0.5 + 0.5 * self.draw())

    def reset(self) -> None:
        """A controller took the node."""
        self.step = 0.0
