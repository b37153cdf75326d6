"""Each user's decayed usage, for the planner's fair-share factor (scheduler/priority.py).

Usage is allocated CPU-seconds (CPUs held × wall time, as Slurm counts it): an attempt's whole
usage is added when it ends, and halves every `half_life_s` from then on; the attempts running
now are counted by the dispatcher at each pass (CPUs × time since they started, not decayed).
Kept in memory only: after a controller restart every user's usage starts again at zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class DecayedUsage:
    half_life_s: float = 7 * 86400.0
    _used: dict[str, tuple[float, float]] = field(default_factory=dict)  # owner → (usage, as of when)

    def _decayed(self, value: float, since: float, now: float) -> float:
        if self.half_life_s <= 0:
            return 0.0
        return float(value * 0.5 ** (max(now - since, 0.0) / self.half_life_s))

    def add(self, owner: str, cpu_seconds: float, at: float) -> None:
        value, since = self._used.get(owner, (0.0, at))
        if at < since:  # an attempt that ended before the last one counted: decay it to then
            cpu_seconds, at = self._decayed(cpu_seconds, at, since), since
        self._used[owner] = (self._decayed(value, since, at) + max(cpu_seconds, 0.0), at)

    def at(self, now: float) -> dict[str, float]:
        return {owner: self._decayed(value, since, now) for owner, (value, since) in self._used.items()}

    def saved(self) -> dict[str, tuple[float, float]]:
        """The usage as it is now, to put back (`restore`) if what was added since is undone."""
        return dict(self._used)

    def restore(self, saved: dict[str, tuple[float, float]]) -> None:
        self._used = dict(saved)
