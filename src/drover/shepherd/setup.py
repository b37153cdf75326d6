"""Process set-up (Accelerator firing sequence, steps 5, 8, 12, 13; GE: "set limits according
to queue/job configuration"): nice, CPU affinity and rlimits for the job's processes.

Who gets them. The Accelerator's subtasker sets its own affinity (step 8) and nice (step 13)
before it runs the precmd (step 20), the job (21) and the postcmd (22): all three inherit them.
So do Drover's: the job's own prolog, the job and the job's own epilog. The site's methods (node
and queue prolog and epilog, PE start and stop) do not: GE sets the limits in the job's child
alone ("son"), and a node's script run as root must not be slowed, pinned to the CPUs one job
asked for, or held to that job's rlimits, or its failure (which puts the node in ERROR) would be
the job's doing. Hence the set-up is made in each of the job's processes, between fork and exec
(`apply` in Popen's preexec function: os.* and resource.* calls only, since the shepherd has one
thread; Popen runs it after the switch to the owner, who may raise its nice and lower its
limits, which is all it does), and the
shepherd itself stays as it was. Only a job of the shepherd's own user, which starts with
posix_spawn (launch.py) and so runs no code of ours in between, takes them from the shepherd,
set just before it starts (`apply`): the site's methods that follow it get back what the
shepherd had (`restore`). A set-up the
shepherd could not take back (`reversible`: hard limits a root shepherd locks, which it cannot
raise again without CAP_SYS_RESOURCE; a nice an unprivileged shepherd would raise on itself; a
CPU time limit, which counts what the shepherd used over all its attempts) is
never taken by the shepherd: such a job starts through Popen, its set-up in its own child, as
another user's does. A shepherd that took a job's set-up gives it back as soon as the job has
it (shepherd/main.py `_start`), and serves the next attempt as it was before.

- nice: nice(8 - priority), as the Accelerator does, plus the queue's nice (jobd's), clamped
  to 0..19 — a job of priority 0 runs at nice 8, one of priority 8 or more at nice 0, one of
  priority -11 or less at 19. (Below 0 would need root, and batch jobs should yield to a
  laptop's interactive use.)
- CPU affinity: the CPUs the scheduler gave the attempt, mapped onto the CPUs this process may
  use. Plain affinity can be widened again by the job; where a cpuset cgroup is writable, the
  containment pins them for good (containment.v1), for every process of the attempt.
- rlimits: the node's configured limits ([execd] rlimits = {nofile = 4096, core = 0}); for a
  job that runs as its owner, soft and hard, so the job cannot raise them again.
- signals: exec resets every caught signal to its default, and Popen's restore_signals resets
  SIGPIPE, SIGXFZ and SIGXFSZ; the fork server cleared the signal mask.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass

NICE_BASE = 8

RLIMITS = {
    "core": resource.RLIMIT_CORE, "cpu": resource.RLIMIT_CPU, "data": resource.RLIMIT_DATA,
    "fsize": resource.RLIMIT_FSIZE, "nofile": resource.RLIMIT_NOFILE, "nproc": resource.RLIMIT_NPROC,
    "stack": resource.RLIMIT_STACK, "as": resource.RLIMIT_AS, "memlock": resource.RLIMIT_MEMLOCK,
}


def nice_for(priority: int, queue_nice: int = 0) -> int:
    return min(max(NICE_BASE - priority + queue_nice, 0), 19)


def physical_cpus(cpu_ids: list[int]) -> set[int]:
    """The scheduler counts a node's CPUs 0..N-1; this process may use a particular set of them."""
    usable = sorted(os.sched_getaffinity(0))
    return {usable[i] for i in cpu_ids if i < len(usable)} or set(usable)


@dataclass(frozen=True, slots=True)
class Setup:
    """What a job's process is set to, worked out in the shepherd (not between fork and exec)."""

    nice: int
    cpus: frozenset[int] | None  # None: leave the affinity alone
    rlimits: tuple[tuple[int, int], ...]  # (RLIMIT_*, the limit; -1 unlimited)


def for_attempt(priority: int, cpu_ids: list[int], rlimits: dict[str, int], queue_nice: int = 0) -> Setup:
    return Setup(nice_for(priority, queue_nice), frozenset(physical_cpus(cpu_ids)) if cpu_ids else None,
                 tuple((RLIMITS[name], value) for name, value in rlimits.items()))


def apply(setup: Setup, lock_hard: bool) -> None:
    """Set this process up; `lock_hard`: the hard limits too (root may; a job's owner may not
    raise them back)."""
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if setup.nice > current or os.geteuid() == 0:
        os.setpriority(os.PRIO_PROCESS, 0, setup.nice)
    if setup.cpus is not None:
        os.sched_setaffinity(0, setup.cpus)
    for which, value in setup.rlimits:
        soft, hard = resource.getrlimit(which)
        limit = value if value >= 0 else resource.RLIM_INFINITY
        if hard != resource.RLIM_INFINITY and (limit == resource.RLIM_INFINITY or limit > hard):
            limit = hard
        resource.setrlimit(which, (limit, limit if lock_hard else hard))


def reversible(setup: Setup, lock_hard: bool) -> bool:
    """Whether the shepherd may take `setup` on itself and give it back afterwards (`restore`):
    not where it would lock hard limits, which only a process with CAP_SYS_RESOURCE may raise
    again (root in a container often lacks it), nor where an unprivileged shepherd would raise
    its own nice, which it may not lower again (a shepherd serves attempt after attempt, each
    at the nice its job gets: execd/shepherd_state.py). Such a job gets its set-up in its own
    child."""
    if lock_hard and setup.rlimits:
        return False
    if any(which == resource.RLIMIT_CPU for which, _ in setup.rlimits):
        return False  # counted against all the CPU the shepherd ever used: SIGXCPU could come
    return os.geteuid() == 0 or setup.nice <= os.getpriority(os.PRIO_PROCESS, 0)


@dataclass(frozen=True, slots=True)
class Saved:
    """The shepherd's nice, affinity and rlimits before it set itself up for a job."""

    nice: int
    cpus: frozenset[int]
    rlimits: tuple[tuple[int, tuple[int, int]], ...]


def saved(setup: Setup) -> Saved:
    """What `apply(setup)` would change, as it is now."""
    return Saved(os.getpriority(os.PRIO_PROCESS, 0), frozenset(os.sched_getaffinity(0)),
                 tuple((which, resource.getrlimit(which)) for which, _ in setup.rlimits))


def restore(before: Saved) -> None:
    """In a site method's child, between fork and exec (os.* and resource.* calls only): back to
    what the shepherd had, as far as this process may. Never raises: a preexec function that
    raises fails the method's start."""
    try:
        if os.getpriority(os.PRIO_PROCESS, 0) != before.nice:
            os.setpriority(os.PRIO_PROCESS, 0, before.nice)
    except OSError:
        pass
    try:
        os.sched_setaffinity(0, before.cpus)
    except OSError:
        pass
    for which, limits in before.rlimits:
        try:
            resource.setrlimit(which, limits)
        except (OSError, ValueError):
            pass
