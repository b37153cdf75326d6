"""What this host offers (CPUs and memory), and how busy it is."""

from __future__ import annotations

import os
import socket

from drover.protocol.node_channel import Heartbeat


def host_cpus() -> int:
    return len(os.sched_getaffinity(0))


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
