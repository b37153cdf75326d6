"""Process set-up before the job starts (Accelerator firing sequence, steps 5, 8, 12, 13; GE:
"set limits according to queue/job configuration"), applied to the shepherd itself just before
it starts the job, which inherits them: no Python runs in the job's process.

- nice: nice(8 - priority), as the Accelerator does, plus the queue's nice (jobd's), clamped
  to 0..19 — a job of priority 0 runs at nice 8, one of priority 8 or more at nice 0, one of
  priority -11 or less at 19. (Below 0 would need root, and batch jobs should yield to a
  laptop's interactive use.)
- CPU affinity: the CPUs the scheduler gave the attempt, mapped onto the CPUs this process may
  use. Plain affinity can be widened again by the job; where a cpuset cgroup is writable, the
  containment pins them for good (containment.v1).
- rlimits: the node's configured limits ([execd] rlimits = {nofile = 4096, core = 0}).
- signals: exec resets every caught signal to its default, and Popen's restore_signals resets
  SIGPIPE, SIGXFZ and SIGXFSZ; the fork server cleared the signal mask.
"""

from __future__ import annotations

import os
import resource

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


def apply(priority: int, cpu_ids: list[int], rlimits: dict[str, int], queue_nice: int = 0) -> None:
    current = os.getpriority(os.PRIO_PROCESS, 0)
    wanted = nice_for(priority, queue_nice)
    if wanted > current or os.geteuid() == 0:
        os.setpriority(os.PRIO_PROCESS, 0, wanted)
    if cpu_ids:
        os.sched_setaffinity(0, physical_cpus(cpu_ids))
    for name, value in rlimits.items():
        which = RLIMITS[name]
        soft, hard = resource.getrlimit(which)
        limit = value if value >= 0 else resource.RLIM_INFINITY
        if hard != resource.RLIM_INFINITY and (limit == resource.RLIM_INFINITY or limit > hard):
            limit = hard
        resource.setrlimit(which, (limit, limit if os.geteuid() == 0 else hard))
