"""Failover: how long after `kill -9` of the active controller the standby serves `drover status`.

Two controllers on one private PostgreSQL server (durable: the server's defaults), one node
with two jobs running and two waiting (tests/helpers/ha_cluster.py: the set-up of
docs/high-availability.md on one machine). The clock starts at the kill and stops when a
`drover status` given both controllers' sockets has answered; that command is started right
after the kill, and finds the new active controller by itself (client/addresses.py). The
command's own start (about 90 ms on the 2-core VM, bench B6) is part of the figure, as it is
for a user.

    .venv/bin/python bench/failover.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.helpers.ha_cluster import HaCluster  # noqa: E402
from tests.helpers.postgres import PrivateServer  # noqa: E402
from tests.helpers.wait import wait_until  # noqa: E402


def one_failover(server: PrivateServer) -> tuple[float, float]:
    """(seconds from the kill to `drover status` answered, seconds until the standby's
    /v1/health says it is active)."""
    url = server.url(server.create_database())
    with HaCluster(url) as cluster:
        cluster.start_controller("a")
        cluster.wait_role("a", "active")
        cluster.start_controller("b")
        cluster.wait_role("b", "standby")
        cluster.start_execd()
        cluster.wait_node_up()
        running = [cluster.submit("--", "sleep", "30") for _ in range(2)]
        for _ in range(2):
            cluster.submit("--", "true")
        wait_until(lambda: all(cluster.json("show", str(job))["state"] == "running" for job in running))
        killed = time.monotonic()
        cluster.kill("a")
        cluster.drover("status")
        served = time.monotonic() - killed
        cluster.wait_role("b", "active", timeout=30)
        active = time.monotonic() - killed
        cluster.drover("cancel", *map(str, running))
        return served, active


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    server = PrivateServer().start(durable=True)
    try:
        samples = [one_failover(server) for _ in range(args.repeat)]
    finally:
        server.stop()
    served = [sample[0] for sample in samples]
    for n, (status_s, active_s) in enumerate(samples, 1):
        print(f"run {n}: drover status answered {status_s * 1000:.0f} ms after kill -9 "
              f"(the standby's health said active after {active_s * 1000:.0f} ms)")
    print(f"failover, kill -9 -> drover status served: median {statistics.median(served) * 1000:.0f} ms "
          f"[{min(served) * 1000:.0f}-{max(served) * 1000:.0f}] over {len(served)} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
