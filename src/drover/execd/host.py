"""What this host offers: CPUs and memory."""

from __future__ import annotations

import os
import socket


def host_cpus() -> int:
    return len(os.sched_getaffinity(0))


def host_memory_mib() -> int:
    import psutil

    return int(psutil.virtual_memory().total // (1024 * 1024))


def host_name() -> str:
    return socket.gethostname().split(".")[0]
