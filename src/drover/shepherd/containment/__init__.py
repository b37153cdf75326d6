"""Containment: every process an attempt starts belongs to it, and none is left when it ends.

Three backends behind one small interface, chosen once per attempt (`choose`):

  cgroup-v2   a cgroup of the attempt's own: cgroup.kill ends all, cgroup.freeze suspends all;
              memory.max, memory.events and memory.peak where the memory controller is enabled;
              pids.max and pids.events where the pids controller is
  cgroup-v1   the memory, freezer, cpuacct, cpuset and pids hierarchies: memory.limit_in_bytes,
              the oom_kill counter of memory.oom_control, the freezer to suspend and to kill
              without races (freeze, SIGKILL all, thaw), pids.max and pids.events; the devices
              hierarchy denies the node's GPUs the attempt was not given (v2 would need a BPF
              program for that, which Drover does not load: there, only the environment hides them).
              The cpuset is the slot's, made once per set of CPUs and kept between attempts
              (slots.py): entering a fresh cpuset is the slowest step of a v1 containment
  subreaper   no writable cgroups (a laptop without root): the shepherd is the child subreaper
              of the job's tree and kills it with a loop; suspend is SIGSTOP/SIGCONT; no
              process limit (RLIMIT_NPROC counts all of the owner's processes, not the job's)

The process limit (pids.max, the node's pids_max) bounds what one job may fork: a fork bomb
stops there, and the host's other jobs keep their share of the host's pids.

A process group alone does not contain (setsid escapes it); it only carries signals.
The order of preference: a cgroup v2 with the memory controller, else v1 where its memory
controller is writable (it enforces --mem), else v2 without memory, else the subreaper.
DROVER_CONTAINMENT=cgroup-v2|cgroup-v1|subreaper forces a backend (tests use it).

Placement: the shepherd moves itself into the attempt's cgroup just before it starts the job
and back out right after (Popen returns once the job has exec'd), so the job is a member
before it runs a single instruction of its own, and killing the cgroup never kills the shepherd.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol

from drover.records import ContainmentRecord


class Containment(Protocol):
    name: str
    memory_limit_mib: int  # 0: none enforced
    pids_limit: int  # the attempt's pids.max; 0: none enforced
    hidden_gpus: list[int]  # the node's GPUs the attempt's devices cgroup denies it (v1 only)

    def enter(self) -> None:
        """Move the calling process (the shepherd) in, so that what it starts now is inside."""

    def leave(self) -> None:
        """Move the calling process back where it was."""

    def kill_all(self) -> None:
        """SIGKILL every process of the attempt; return once none is left."""

    def freeze(self) -> None:
        """Stop every process of the attempt where it stands (the default suspend)."""

    def thaw(self) -> None:
        """Let go what `freeze` stopped; nothing when it did not (a subreaper's thaw is a
        SIGCONT a running job would see), or when it has been let go since."""

    def oom_killed(self) -> bool: ...

    def oom_kills(self) -> int:
        """How many of the attempt's processes the kernel's out-of-memory killer killed (the
        oom_kill counter of memory.events, or of memory.oom_control on v1); 0 without one."""

    def pids_refused(self) -> int:
        """How many forks the process limit refused (pids.events "max")."""

    def peak_memory_bytes(self) -> int | None: ...

    def cpu_time_s(self) -> float | None: ...

    def remove(self) -> None:
        """Remove what was created (after kill_all)."""

    def record(self) -> ContainmentRecord:
        """Where the attempt's processes are: for the execd, should the shepherd die."""


def choose(attempt: str, memory_mib: int, cpu_ids: list[int] | None = None, cluster: str = "",
           pids_max: int = 0, hidden_gpus: list[int] | None = None) -> Containment:
    """`cpu_ids`: the CPUs the scheduler gave the attempt; a cpuset pins them where writable.
    `cluster`: the cluster's tag, part of the cgroup's name (common.group_name). `pids_max`:
    the attempt's process limit where a pids controller is writable (0: none). `hidden_gpus`:
    the node's GPUs the attempt was not given, denied where a devices cgroup is writable (v1)."""
    name = group_name(cluster, attempt)

    def v1_made(name: str, memory: int) -> Containment | None:
        return v1.create(name, memory, cpu_ids or [], pids_max, hidden_gpus)

    def v2_made(name: str, memory: int) -> Containment | None:
        return v2.create(name, memory, pids_max=pids_max)

    backends: dict[str, Callable[[str, int], Containment | None]] = {
        "cgroup-v2": v2_made, "cgroup-v1": v1_made, "subreaper": fallback.create,
    }
    forced = os.environ.get("DROVER_CONTAINMENT")
    if forced:
        made = backends[forced](name, memory_mib)
        if made is None:
            raise RuntimeError(f"containment {forced} is not available on this host")
        return made
    with_memory = v2.create(name, memory_mib, need_memory=True, pids_max=pids_max)
    if with_memory is not None:
        return with_memory
    for backend in ("cgroup-v1", "cgroup-v2", "subreaper"):
        made = backends[backend](name, memory_mib)
        if made is not None:
            return made
    raise AssertionError("the subreaper fallback is always available")


# Imported here, not in choose(): the fork server imports this package once, and every shepherd
# it forks finds the backends loaded (an import in a shepherd would cost it milliseconds).
from drover.shepherd.containment import fallback, v1, v2  # noqa: E402
from drover.shepherd.containment.common import group_name  # noqa: E402
