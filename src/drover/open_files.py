"""A daemon's limit of open files: its soft limit raised to the hard one, and given back to what
it starts.

A daemon holds a descriptor for each thing it keeps track of: the controller one per connection,
a node daemon and its fork server a few per running attempt (a pidfd, a lifeline, a shepherd's
channel). The soft limit a daemon is started with is often 1024 (systemd's default for services,
and most logins'), which a node with a few hundred attempts running, each with its parallel
tasks, would reach: the next start would fail with EMFILE. The hard limit (systemd: 524288) is
there to be used, and slurmd and HTCondor's daemons raise theirs as these do.

What a node daemon starts gets the soft limit back: a job's open-files limit is the one its node
daemon was started with, as it was before the daemon raised its own (a program that closes every
descriptor below the soft limit, or sizes a table by it, behaves as it would at a login), unless
the node's configuration sets one ([execd] rlimits, shepherd/setup.py).
"""

from __future__ import annotations

import resource

UNLIMITED_AS = 1 << 20  # what an unlimited soft limit is taken for, where a count is needed


def raise_soft_limit() -> tuple[int, int]:
    """The soft limit of open files raised to the hard one, where it may be. Returns the soft
    limit before and now (RLIM_INFINITY as it is)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    before = soft
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass  # a hard limit of infinity the kernel caps (nr_open): kept as it was
    return before, soft


def set_soft_limit(soft: int) -> None:
    """The soft limit of open files set to `soft` (a limit `raise_soft_limit` returned as before),
    the hard one kept."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and (soft == resource.RLIM_INFINITY or soft > hard):
        soft = hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
