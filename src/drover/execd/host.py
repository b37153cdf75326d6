"""What this host offers (CPUs and memory), and how busy it is."""

from __future__ import annotations

import os
import socket

from drover.protocol.node_channel import Heartbeat


def host_cpus() -> int:
    return len(os.sched_getaffinity(0))


# A job's process limit, unless [execd] pids_max sets one: the host's pid_max shared out between
# its CPUs (one job each, at most, where every job asks a CPU) and one share more for the host
# itself, so that even every job at its limit leaves the host's own daemons and logins pids to
# fork with; never under MIN_PIDS (a build with make -j forks hundreds) nor over MAX_PIDS (a
# host with pid_max 4194304 needs no more per job to run anything real).
MIN_PIDS = 1024
MAX_PIDS = 65536


def default_pids_max(pid_max: int, cpus: int) -> int:
    """The process limit of each job on a host with `pid_max` (kernel.pid_max) and `cpus`."""
    return max(MIN_PIDS, min(pid_max // (max(cpus, 1) + 1), MAX_PIDS))


def host_pid_max() -> int:
    """kernel.pid_max; Linux's default (32768) where it cannot be read."""
    try:
        with open("/proc/sys/kernel/pid_max") as file:
            return int(file.read())
    except (OSError, ValueError):
        return 32768


def host_memory_mib() -> int:
    import psutil

    return int(psutil.virtual_memory().total // (1024 * 1024))


def host_status(attempts: int) -> Heartbeat:
    """What a heartbeat says of this host: its load and free memory, and the node's attempts."""
    import psutil

    return Heartbeat(load=round(os.getloadavg()[0], 2),
                     memory_free_mib=int(psutil.virtual_memory().available // (1024 * 1024)), attempts=attempts)


def host_name() -> str:
    return socket.gethostname().split(".")[0]
