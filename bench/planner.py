"""B10: the planner alone, on plain data (bench/run.py B10).

`drover.scheduler.plan.plan()` is pure: it is given the pending work and the nodes as frozen
records and returns the starts and every waiting job's reason. Here it is given 100,000
pending tasks (50,000 single-task jobs and 50 arrays of 1,000 tasks; 1–4 CPUs, 5 owners,
priorities 0, -10 and -100; one job in 20 waiting on a dependency, one in 50 on a begin time)
and 1,000 nodes of 16–64 CPUs, busy as a cluster in use is: each has 0–4 CPUs free.

Figures:
- building the input (the PendingWork and NodeView records, as the controller's dispatch builds
  them from its working set; the controller also reads dependencies, which this leaves out);
- a full pass over that input, as given (the planner sorts it), and over the input kept in the
  planner's order, as the controller keeps it between passes (controller/handlers/work_cache.py);
- a pass after one task completed: the starts of the full pass are taken (their room used,
  their tasks gone from the pending work) and one node gets 4 CPUs back. Measured as the
  controller runs it on a long queue, the quick pass over the kept order, which stops at the
  first job that must wait for room (controller/handlers/dispatch.py), and, for comparison, as
  a full pass from scratch;
- the peak memory (tracemalloc) of building the input and one full pass, in a run of its own
  (tracemalloc slows Python down, so the times come from runs without it).

No published figure of another scheduler is printed beside these: none was found that
measures the same thing and can be cited.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
import tracemalloc
from dataclasses import replace
from typing import Any

from drover.core.arrays import TaskIndices
from drover.core.node_state import NodeState
from drover.core.resources import Resources
from drover.scheduler.plan import Plan, order_key, plan
from drover.scheduler.snapshot import NodeView, PendingIndices, PendingWork

NODES = 1_000
SINGLES = 50_000
ARRAYS = 50
ARRAY_SIZE = 1_000
OWNERS = ("alice", "bob", "carol", "dave", "erin")
PRIORITIES = (0, 0, 0, -10, -100)
NOW = 1_700_000_000.0


def build(seed: int = 1) -> tuple[list[PendingWork], list[NodeView]]:
    """The input of one pass: pending work and nodes, as plain records."""
    rng = random.Random(seed)
    nodes = []
    for n in range(NODES):
        cpus = rng.choice((16, 32, 64))
        memory = cpus * 4096
        free_cpus = rng.randint(0, 4)
        free_ids = frozenset(rng.sample(range(cpus), free_cpus))
        nodes.append(NodeView(f"node{n:04d}", NodeState.UP, Resources(cpus, memory),
                              Resources(free_cpus, free_cpus * 4096), free_ids))
    work = []
    job = 0
    for kind in ["array"] * ARRAYS + ["single"] * SINGLES:
        job += 1
        cpus = rng.choice((1, 1, 2, 4))
        indices = TaskIndices(((1, ARRAY_SIZE, 1),)) if kind == "array" else TaskIndices()
        roll = rng.random()
        work.append(PendingWork(
            job=job, owner=rng.choice(OWNERS), priority=rng.choice(PRIORITIES),
            submitted_at=NOW - 100_000 + job, resources=Resources(cpus, cpus * 1024),
            pending=PendingIndices((), indices, 0),
            max_running=100 if kind == "array" and job % 2 else None,
            dependencies_met=roll >= 0.05, waiting_for="waiting for job 1 (afterok) to complete" if roll < 0.05 else "",
            begin_at=NOW + 3600 if 0.05 <= roll < 0.07 else None, name=f"job{job}",
        ))
    return work, nodes


def after(work: list[PendingWork], nodes: list[NodeView], done: Plan) -> tuple[list[PendingWork], list[NodeView]]:
    """The input of the next pass: the starts of `done` running, and one task of 4 CPUs ended."""
    started: dict[int, int] = {}
    taken: dict[str, list[tuple[int, ...]]] = {}
    by_job = {item.job: item for item in work}
    for start in done.starts:
        started[start.job] = started.get(start.job, 0) + 1
        taken.setdefault(start.node, []).append(start.cpu_ids)
    next_work = []
    for item in work:
        count = started.get(item.job, 0)
        if count == 0:
            next_work.append(item)
        elif count < item.pending.count:
            pending = replace(item.pending, fresh_from=item.pending.fresh_from + count)
            next_work.append(replace(item, pending=pending, running_count=item.running_count + count))
    next_nodes = []
    for view in nodes:
        free, ids = view.free, set(view.free_cpu_ids)
        for cpu_ids in taken.get(view.name, ()):
            ids -= set(cpu_ids)
            free = Resources(free.cpus - len(cpu_ids), free.memory_mib)
        memory = sum(by_job[s.job].resources.memory_mib for s in done.starts if s.node == view.name)
        next_nodes.append(replace(view, free=Resources(free.cpus, free.memory_mib - memory), free_cpu_ids=frozenset(ids)))
    first = next_nodes[0]  # one task of 4 CPUs ended on it: its room is free again
    back = sorted(set(range(first.total.cpus)) - set(first.free_cpu_ids))[:4]
    next_nodes[0] = replace(first, free=first.free + Resources(len(back), len(back) * 1024),
                            free_cpu_ids=first.free_cpu_ids | frozenset(back))
    return next_work, next_nodes


def _figure(samples: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "samples": samples}


def run(repeat: int) -> dict[str, Any]:
    builds, passes, kept, again, quick = [], [], [], [], []
    done = next_plan = quick_plan = Plan()
    work: list[PendingWork] = []
    for _ in range(repeat):
        gc.collect()
        began = time.perf_counter()
        work, nodes = build()
        builds.append(time.perf_counter() - began)
        began = time.perf_counter()
        done = plan(work, nodes, NOW)
        passes.append(time.perf_counter() - began)
        in_order = sorted(work, key=order_key)
        gc.collect()
        began = time.perf_counter()
        plan(in_order, nodes, NOW, presorted=True)
        kept.append(time.perf_counter() - began)
        next_work, next_nodes = after(work, nodes, done)
        gc.collect()
        began = time.perf_counter()
        next_plan = plan(next_work, next_nodes, NOW)
        again.append(time.perf_counter() - began)
        next_in_order = sorted(next_work, key=order_key)
        gc.collect()
        began = time.perf_counter()
        quick_plan = plan(next_in_order, next_nodes, NOW, quick=True, presorted=True)
        quick.append(time.perf_counter() - began)
    tasks = sum(item.pending.count for item in work)
    del work
    gc.collect()
    tracemalloc.start()
    work, nodes = build()
    plan(work, nodes, NOW)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "pending tasks": tasks, "jobs": len(work), "nodes": len(nodes),
        "starts in the full pass": len(done.starts), "jobs given a reason": len(done.pending_reasons),
        "starts in the pass after one task ended": len(next_plan.starts),
        "starts in the quick pass after one task ended": len(quick_plan.starts),
        "jobs the quick pass walked": quick_plan.reached,
        "build the input (ms)": _figure([s * 1000 for s in builds]),
        "full pass, input unsorted (ms)": _figure([s * 1000 for s in passes]),
        "full pass, input in the kept order (ms)": _figure([s * 1000 for s in kept]),
        "quick pass after one task ended, kept order (ms)": _figure([s * 1000 for s in quick]),
        "full pass after one task ended, from scratch (ms)": _figure([s * 1000 for s in again]),
        "peak memory, input + pass (MiB)": peak / 2**20,
    }


if __name__ == "__main__":
    for key, value in run(1).items():
        print(f"{key:<48} {value}")
