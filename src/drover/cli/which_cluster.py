"""Which cluster answers a command that named none: with no personal cluster running, the
machine's shared one, which a command says on stderr once (config.shared_notice_due): "no jobs"
from the shared cluster, right after `drover down`, would otherwise read as the personal
cluster's answer. Every command, `drover`'s and each front end's, is told the cluster its client
found (config.cluster_found, set as it is entered: cli/pipes.py)."""

from __future__ import annotations

import sys


def say_which_cluster(address: str) -> None:
    """Say it, when `address` is the shared cluster's, taken because no personal cluster runs,
    and the notice is due."""
    from drover.config import SOCKET_VARIABLE, falls_back_to_shared, shared_notice_due

    if falls_back_to_shared(address) and shared_notice_due():
        print(f"drover: no personal cluster is running; using the shared cluster at {address} "
              f"(set {SOCKET_VARIABLE} to choose; `drover up` starts your own)", file=sys.stderr)
