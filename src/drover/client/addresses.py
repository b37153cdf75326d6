"""A cluster's controllers as a client knows them: a list of addresses (several controllers may
share one PostgreSQL store, one of them active), the one in use, and where to go next.

A client uses the first address that answers, and keeps using it. When it is refused, or a
standby answers, it goes to the active controller the standby named (if the client may reach
it) or the next address, waiting a little longer after each try (FIRST_WAIT_S doubling up to
LONGEST_WAIT_S), for at most FAIL_OVER_S: long enough for a standby to take over, short enough
that a cluster that is really down is reported as such. A single address is never retried:
there is nothing to fail over to.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing costs milliseconds at start-up; type checkers read this as True
if TYPE_CHECKING:
    from collections.abc import Sequence

FAIL_OVER_S = 30.0
FIRST_WAIT_S = 0.05
LONGEST_WAIT_S = 1.0


def split(addresses: str | Sequence[str]) -> list[str]:
    """"A,B" or ["A", "B"] → ["A", "B"] (a Unix socket path or https://HOST:PORT each)."""
    given = addresses.split(",") if isinstance(addresses, str) else list(addresses)
    found = [address.strip() for address in given if address.strip()]
    if not found:
        raise ValueError("no controller address given")
    return found


class Addresses:
    def __init__(self, addresses: str | Sequence[str], may_reach: bool = False) -> None:
        """`may_reach`: an https:// address a standby names is followed even if it is not in the
        list (the client verifies every controller against the cluster's CA)."""
        self.all = split(addresses)
        self.index = 0
        self.may_reach = may_reach

    @property
    def current(self) -> str:
        return self.all[self.index]

    @property
    def several(self) -> bool:
        return len(self.all) > 1

    def order(self) -> list[int]:
        """Every address once, from the one in use on."""
        return [(self.index + step) % len(self.all) for step in range(len(self.all))]

    def use(self, index: int) -> None:
        self.index = index

    def follow(self, active: str | None) -> bool:
        """After a standby's answer: to the active controller it named, if this client may
        reach it, else to the next address. False if there is nowhere else to go."""
        if active and active != self.current:
            if active in self.all:
                self.index = self.all.index(active)
                return True
            if self.may_reach and active.startswith("https://"):
                self.all.append(active)
                self.index = len(self.all) - 1
                return True
        if not self.several:
            return False
        self.index = (self.index + 1) % len(self.all)
        return True


def standby_answer(status: int, body: bytes) -> tuple[bool, str | None]:
    """Whether a reply is a standby's refusal, and the active controller it names (if any)."""
    if status != 503:
        return False, None
    try:
        reply = json.loads(body)
    except ValueError:
        return False, None
    if not isinstance(reply, dict) or reply.get("kind") != "standby":
        return False, None
    active = reply.get("active")
    return True, active if isinstance(active, str) else None
