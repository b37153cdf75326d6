"""HyperQueue's server and one worker in a process of their own, for the benchmarks' reference.

The PyPI package `hyperqueue` ships no `hq` binary: its extension module holds HyperQueue's
server and worker (the Rust code `hq server start` and `hq worker start` run, each on a thread of
its own with its own event loop), started through `hyperqueue.ffi.cluster.Cluster`. This process
hosts them and nothing else, so that the benchmark's client is not in it and their CPU can be
read from /proc: the server's thread apart from the worker's, and the tasks (the worker starts
and reaps them) in the process's cutime and cstime.

    python bench/hq_host.py SERVER_DIR CPUS

It writes SERVER_DIR/ready.json ({"pid", "server_threads"}) once the server and the worker are
up, and stops both when its standard input closes.
"""

from __future__ import annotations

import json
import os
import sys


def threads() -> set[int]:
    return {int(tid) for tid in os.listdir("/proc/self/task")}


def main() -> int:
    server_dir, cpus = sys.argv[1], int(sys.argv[2])
    from hyperqueue.ffi.cluster import Cluster

    before = threads()
    cluster = Cluster(server_dir)
    server = threads() - before  # the server's thread, started by Cluster() before it returns
    cluster.add_worker(cpus)
    ready = os.path.join(server_dir, "ready.json")
    with open(ready + ".part", "w") as out:
        json.dump({"pid": os.getpid(), "server_threads": sorted(server)}, out)
    os.rename(ready + ".part", ready)
    sys.stdin.read()  # the benchmark closes it to stop us
    cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
