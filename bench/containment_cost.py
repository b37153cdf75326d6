"""The CPU a containment costs an attempt, in one process: what `choose`, entering, leaving,
killing, reading the usage and `remove` spend around a `/bin/true`, without the fork, the
shepherd's other steps or the scheduling noise a forked shepherd's figure carries.

    .venv/bin/python bench/containment_cost.py [--attempts 500] [--containment cgroup-v1|cgroup-v2|subreaper]

Prints this process's CPU per attempt (user and system: the kernel's cgroup work done in our
system calls is there; what kworkers do after an rmdir is not: bench/machine_cpu.py counts it),
the job's, and the wall time. Each attempt on CPU 0, one at a time, as a node's slot runs them.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

from drover.shepherd.containment import choose
from drover.shepherd.containment.common import remember_own_cgroups, remove_cluster_parents


def attempt(cluster: str, n: int) -> None:
    contained = choose(f"1.{n}.1", 0, [0], cluster=cluster)
    contained.enter()
    pid = os.posix_spawn("/bin/true", ["/bin/true"], {})
    contained.leave()
    os.waitpid(pid, 0)
    contained.kill_all()
    contained.oom_kills()
    contained.pids_refused()
    contained.peak_memory_bytes()
    contained.cpu_time_s()
    contained.remove()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attempts", type=int, default=500)
    parser.add_argument("--containment", help="force a backend (default: the best this host has)")
    args = parser.parse_args()
    if args.containment:
        os.environ["DROVER_CONTAINMENT"] = args.containment
    remember_own_cgroups()  # as the fork server does, once
    cluster = f"bench{os.getpid()}"
    try:
        for n in range(20):  # the slot made, the code paths warm
            attempt(cluster, n)
        own, jobs, began = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        for n in range(args.attempts):
            attempt(cluster, n)
        own_after, jobs_after = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.perf_counter() - began
    finally:
        remove_cluster_parents(cluster)
    per = 1000 / args.attempts
    user, system = (own_after.ru_utime - own.ru_utime) * per, (own_after.ru_stime - own.ru_stime) * per
    job = (jobs_after.ru_utime + jobs_after.ru_stime - jobs.ru_utime - jobs.ru_stime) * per
    print(f"containment: {args.containment or 'the best this host has'}; {args.attempts} attempts")
    print(f"CPU per attempt: containment {user + system:.3f} ms (user {user:.3f}, system {system:.3f}), "
          f"the job {job:.3f} ms; wall {wall * per:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
