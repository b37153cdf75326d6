"""Who follows whom among the attempts (controller/handlers/promises.py): each promised attempt,
by the attempt it follows, while it waits for that one's room; and how many attempts on each node
have a follower, kept up to date as promises come and go, so that every planning pass reads it
at once instead of walking the promises (handlers/dispatch.schedule asks it each pass)."""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, ValuesView

from drover.core.ids import kept_for_short_names

AttemptKey = tuple[int, int, int]  # (job, task index, attempt number): how the attempts are kept


def _fast_attempt_key(name: str) -> AttemptKey | None:
    """An attempt's name (`JOB.INDEX.NUMBER`) as its key, to look it up in memory; None for what is
    no attempt's name. Unpacked by hand: every report and order looks up its attempt, dozens of
    calls per job. A key this gives may lie beyond what the store holds (a node's report can name
    any number, and int() takes ' 7', '1_0' and '٣'): what asks the store, or keeps the key,
    reads names with core/ids.bounded_attempt_key (or parse_attempt_name), which bound them."""
    parts = name.split(".")
    if len(parts) != 3:
        return None
    try:
        return int(parts[0]), int(parts[1]), int(parts[2])
    except ValueError:
        return None


fast_attempt_key = kept_for_short_names(_fast_attempt_key)


class Followers:
    """The followed attempt's key → its follower's key, each pair on one node (a follower is
    promised on the node of the attempt it follows)."""

    __slots__ = ("_follower", "_node", "_on_node")

    def __init__(self) -> None:
        self._follower: dict[AttemptKey, AttemptKey] = {}
        self._node: dict[AttemptKey, str] = {}
        self._on_node: dict[str, int] = {}

    def add(self, followed: AttemptKey, follower: AttemptKey, node: str) -> None:
        self.pop(followed)
        self._follower[followed] = follower
        self._node[followed] = node
        self._on_node[node] = self._on_node.get(node, 0) + 1

    def pop(self, followed: AttemptKey) -> AttemptKey | None:
        """The follower of `followed`, no longer following it; None if it had none."""
        follower = self._follower.pop(followed, None)
        if follower is not None:
            node = self._node.pop(followed)
            left = self._on_node[node] - 1
            if left:
                self._on_node[node] = left
            else:
                del self._on_node[node]
        return follower

    def get(self, followed: AttemptKey) -> AttemptKey | None:
        return self._follower.get(followed)

    def followed_on(self, node: str) -> int:
        """How many of the attempts on `node` a promised attempt follows."""
        return self._on_node.get(node, 0)

    def clear(self) -> None:
        self._follower.clear()
        self._node.clear()
        self._on_node.clear()

    def items(self) -> ItemsView[AttemptKey, AttemptKey]:
        return self._follower.items()

    def values(self) -> ValuesView[AttemptKey]:
        return self._follower.values()

    def as_dict(self) -> dict[AttemptKey, AttemptKey]:
        return dict(self._follower)

    def __contains__(self, followed: object) -> bool:
        return followed in self._follower

    def __iter__(self) -> Iterator[AttemptKey]:
        return iter(self._follower)

    def __len__(self) -> int:
        return len(self._follower)
