"""Multifactor priority, on plain data (Slurm's priority/multifactor, simplified). Pure.

A pending job's priority is a weighted sum of four factors:

    total = weight_age × age + weight_fairshare × fairshare + weight_queue × queue + weight_job × job

- age: the time since submission over `max_age_s`, capped at 1.0 (Slurm's PriorityMaxAge);
- fairshare: 2^(-U/S), U the owner's decayed usage over everyone's, S the owner's shares over
  everyone's (an owner without shares named has 1), so 1.0 for no use, 0.5 for using exactly
  one's share, toward 0 beyond (Slurm's classic fair-share factor);
- queue: the job's queue's `priority` over the highest queue priority configured (0..1);
- job: the job's own priority as an integer, not normalised (users may only lower it, so it
  works like Slurm's nice, subtracted from the rest).

The default weights (0, 0, 0, 1) give today's order: the job's priority, then submission order.
Ties are always broken by submission time and job id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

DAY = 86400.0


@dataclass(frozen=True, slots=True)
class Weights:
    age: float = 0.0
    fairshare: float = 0.0
    queue: float = 0.0
    job: float = 1.0
    max_age_s: float = 7 * DAY

    @property
    def plain(self) -> bool:
        """Only the job's own priority counts (the default)."""
        return self.age == 0 and self.fairshare == 0 and self.queue == 0 and self.job == 1


@dataclass(frozen=True, slots=True)
class Policy:
    """What the controller knows and the planner weighs: the weights, every owner's decayed
    usage (allocated CPU-seconds), the owners' shares, and the highest queue priority."""

    weights: Weights = Weights()
    usage: Mapping[str, float] = field(default_factory=dict)
    shares: Mapping[str, float] = field(default_factory=dict)
    max_queue_priority: int = 0
    backfill: bool = True  # EASY backfill on time limits (plan.py)


DEFAULT_POLICY = Policy()


@dataclass(frozen=True, slots=True)
class Factors:
    age: float
    fairshare: float
    queue: float
    job: int
    total: float


class Weigher:
    """The factors of each job in one pass (the owners' normalised usage and shares are computed once)."""

    def __init__(self, policy: Policy, owners: Iterable[str], now: float) -> None:
        self.policy = policy
        self.now = now
        everyone = set(owners) | set(policy.usage)
        total_usage = sum(max(policy.usage.get(owner, 0.0), 0.0) for owner in everyone)
        total_shares = sum(self._shares(owner) for owner in everyone) or 1.0
        self._fairshare: dict[str, float] = {}
        for owner in everyone:
            used = max(policy.usage.get(owner, 0.0), 0.0) / total_usage if total_usage > 0 else 0.0
            share = self._shares(owner) / total_shares
            self._fairshare[owner] = float(2.0 ** (-used / share)) if share > 0 else 0.0

    def _shares(self, owner: str) -> float:
        return max(self.policy.shares.get(owner, 1.0), 0.0)

    def factors(self, owner: str, priority: int, queue_priority: int, submitted_at: float) -> Factors:
        weights = self.policy.weights
        age = min(max(self.now - submitted_at, 0.0) / weights.max_age_s, 1.0) if weights.max_age_s > 0 else 1.0
        fairshare = self._fairshare.get(owner, 1.0)
        top = self.policy.max_queue_priority
        queue = min(max(queue_priority / top, 0.0), 1.0) if top > 0 else 0.0
        total = weights.age * age + weights.fairshare * fairshare + weights.queue * queue + weights.job * priority
        return Factors(age, fairshare, queue, priority, total)
