"""The node's CPU per job on B1's array, for two or more source trees in turn: each run starts a
personal cluster of 2 slots from one tree (its `src`, first on PYTHONPATH for every daemon the
cluster starts), runs one array of `/bin/true` through it, and reads from /proc the execd's
utime + stime after the array (its start-up included), and the fork server's, with its
shepherds and their jobs, over the array. The trees take turns run after run, so the machine's
load is shared between them; each run notes the load average as it ends.

    git archive main | tar -x -C /tmp/main-tree
    .venv/bin/python bench/execd_cpu.py /tmp/main-tree/src src --jobs 1000 --repeat 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from run import TRUE_COMMAND, cluster, cpu_seconds, drover_cpu, drover_daemons  # bench/run.py

FORK_SERVER = "shepherds and jobs"


def one_run(tree: str, jobs: int) -> dict[str, float]:
    """One cluster from `tree`, one array of `jobs`: the figures of that run."""
    os.environ["PYTHONPATH"] = tree  # the cluster's daemons inherit it (cli/cluster.py `_spawn`)
    with cluster() as c, c.client() as client:
        daemons = drover_daemons(c)
        environ = Path(f"/proc/{daemons['execd']}/environ").read_bytes().split(b"\0")
        assert f"PYTHONPATH={tree}".encode() in environ, f"the execd does not run {tree}"
        before = drover_cpu(daemons)
        began = time.perf_counter()
        (job,) = client.submit([c.job(TRUE_COMMAND, array=f"1-{jobs}")])
        client.wait(job)
        seconds = time.perf_counter() - began
        execd = cpu_seconds(daemons["execd"])
        after = drover_cpu(daemons, settle=True)
        return {"execd ms per job": execd / jobs * 1000,
                "fork server, shepherds and jobs ms per job": (after[FORK_SERVER] - before[FORK_SERVER]) / jobs * 1000,
                "jobs/s": jobs / seconds, "load average": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", help="source directories (each holding the drover package)")
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    trees = [os.path.abspath(tree) for tree in args.trees]
    runs: dict[str, list[dict[str, float]]] = {tree: [] for tree in trees}
    for repetition in range(args.repeat):
        for tree in trees:
            figures = one_run(tree, args.jobs)
            runs[tree].append(figures)
            print(f"run {repetition + 1} {tree}: " + ", ".join(f"{k} {v:.3f}" for k, v in figures.items()), flush=True)
    for tree in trees:
        print(tree)
        for key in runs[tree][0]:
            samples = [run[key] for run in runs[tree]]
            print(f"  {key}: {statistics.median(samples):.3f} [{min(samples):.3f}-{max(samples):.3f}]")


if __name__ == "__main__":
    main()
