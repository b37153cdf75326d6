"""A daemon's limit of open files: its soft limit raised to the hard one, and given back to what
it starts.

A daemon holds a descriptor for each thing it keeps track of: the controller one per connection,
a node daemon and its fork server a few per running attempt (a pidfd, a lifeline, a shepherd's
channel). The soft limit a daemon is started with is often 1024 (systemd's default for services,
and most logins'), which a node with a few hundred attempts running, each with its parallel
tasks, would reach: the next start would fail with EMFILE. The hard limit (systemd: 524288) is
there to be used, and slurmd and HTCondor's daemons raise theirs as these do.

What a node daemon starts of the site's or the job's gets the soft limit back: a job's open-files
limit is the one its node daemon was started with, as it was before the daemon raised its own (a
program that closes every descriptor below the soft limit, or sizes a table by it, behaves as it
would at a login), unless the node's configuration sets one ([execd] rlimits, shepherd/setup.py);
so does the site's exit hook (`with_limit_started_with`). Drover's own helpers (the owner's output
readers and writers, owner_process.py) keep the raised one.
"""

from __future__ import annotations

import resource

UNLIMITED_AS = 1 << 20  # what an unlimited soft limit is taken for, where a count is needed


_started_with: int | None = None  # the soft limit before raise_soft_limit raised it, if it did


def raise_soft_limit() -> tuple[int, int]:
    """The soft limit of open files raised to the hard one, where it may be. Returns the soft
    limit before and now (RLIM_INFINITY as it is)."""
    global _started_with
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    before = soft
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
            _started_with = before
        except (ValueError, OSError):
            pass  # a hard limit of infinity the kernel caps (nr_open): kept as it was
    return before, soft


def with_limit_started_with(argv: list[str]) -> list[str]:
    """`argv` to run with the soft limit this process was started with, where it raised its own:
    through sh's `ulimit`, as no Python call sets a child's limit between fork and exec without
    running Python in the child (preexec_fn, unsafe in a daemon with threads)."""
    if _started_with is None or _started_with == resource.RLIM_INFINITY:
        return argv
    return ["/bin/sh", "-c", 'ulimit -Sn "$0" 2>/dev/null; exec "$@"', str(_started_with), *argv]


def set_soft_limit(soft: int) -> None:
    """The soft limit of open files set to `soft` (a limit `raise_soft_limit` returned as before),
    the hard one kept."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and (soft == resource.RLIM_INFINITY or soft > hard):
        soft = hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
