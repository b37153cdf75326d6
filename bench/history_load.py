"""B5: does a long history slow the cluster down, and what does sampling cost?

1. A fresh personal cluster against one whose store holds 1,000,000 ended jobs (each with its
   task, its attempt, six events and its accounting row; bench/history_store.py builds it once
   per run, by SQL into a store the controller made, and each repetition starts from a copy),
   both with `[execd] sample_s = 1.0`: B1's array of 1,000 × /bin/true on 2 slots (first
   submission → last recorded finished), and the latency of a cold `drover status` (the user's
   view, default filters) and of a cold `drover submit -- true`. Reported: each figure on each
   cluster, and history ÷ fresh (goal: within 10 %).
2. A cluster of 100 CPUs running 100 one-CPU `sleep 60` jobs: the controller's and the execd's
   CPU (utime + stime) over 20 s once all 100 run, as % of one core, with `sample_s = 1.0` and
   with sampling effectively off (`sample_s = 86400`). Goal: under 2 % each.

Run through bench/run.py: `.venv/bin/python bench/run.py B5 [--repeat N] [--quick]` (quick: a
history of 100,000 jobs, arrays of 300, 10 s of CPU).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import history_store  # bench/history_store.py
from run import DROVER, Cluster, cpu_seconds, remove_spool, summary  # bench/run.py

SAMPLING = "[execd]\nsample_s = 1.0\n"
NO_SAMPLING = "[execd]\nsample_s = 86400.0\n"


@contextmanager
def configured_cluster(config: str, cpus: int = 2, store: Path | None = None) -> Iterator[Cluster]:
    """A personal cluster of `cpus` CPUs with `config` as its drover.toml, starting from a copy of
    `store` if given; everything removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="drvb-", dir="/tmp"))
    state = root / "state"
    state.mkdir(mode=0o700)
    (state / "drover.toml").write_text(config)
    if store is not None:
        shutil.copyfile(store, state / "drover.db")
        os.sync()  # the copy's gigabytes written out before anything is measured, not during
    made = Cluster(root)
    try:
        made.drover("up", "--cpus", str(cpus))
        yield made
    finally:
        made.drover("down", check=False)
        remove_spool(root / "state")
        shutil.rmtree(root, ignore_errors=True)


def cold_ms(c: Cluster, args: list[str], times: int) -> list[float]:
    """Wall time of `times` cold CLI processes (ms)."""
    samples = []
    for _ in range(times):
        began = time.perf_counter()
        subprocess.run([DROVER, *args], env=c.env, cwd=c.work, capture_output=True, check=True)
        samples.append((time.perf_counter() - began) * 1000)
    return samples


def measure(c: Cluster, n: int, times: int) -> dict[str, float]:
    """On an idle cluster: `drover status` and `drover submit -- true` latencies (medians of
    `times` cold runs), then B1's array of n × /bin/true (jobs/s)."""
    status = cold_ms(c, ["status"], times)
    submit = cold_ms(c, ["submit", "--", "true"], times)
    with c.client() as client:
        for job in client.jobs():  # the submitted `true` jobs end before the array starts
            client.wait(job.id)
        began = time.perf_counter()
        (job,) = client.submit([c.job("/bin/true\n", array=f"1-{n}")])
        client.wait(job)
        rate = n / (time.perf_counter() - began)
    return {"status": statistics.median(status), "submit": statistics.median(submit), "rate": rate}


def running_cpu(config: str, jobs: int, seconds: float) -> dict[str, float]:
    """% of one core the controller and the execd use while `jobs` one-CPU `sleep 60` jobs run."""
    with configured_cluster(config, cpus=jobs) as c, c.client() as client:
        ids = client.submit([c.job("sleep 60\n", cpus=1) for _ in range(jobs)])
        deadline = time.monotonic() + 120
        while sum(client.job(job).task_counts.get("running", 0) for job in ids) < jobs:  # each job's own view
            if time.monotonic() > deadline:
                raise RuntimeError(f"B5: fewer than {jobs} jobs running after 120 s")
            time.sleep(0.2)
        time.sleep(2)  # the starts' own work done
        controller = c.controller_pid()
        execd = int((c.root / "state" / "execd.pid").read_text().split()[0])
        before = cpu_seconds(controller), cpu_seconds(execd)
        began = time.monotonic()
        time.sleep(seconds)
        wall = time.monotonic() - began
        after = cpu_seconds(controller), cpu_seconds(execd)
        still = sum(client.job(job).task_counts.get("running", 0) for job in ids)
        client.cancel([str(job) for job in ids])
        if still < jobs:
            raise RuntimeError(f"B5: only {still} of {jobs} jobs still running at the end of the measurement")
    return {"controller": (after[0] - before[0]) / wall * 100, "execd": (after[1] - before[1]) / wall * 100}


def run(repeat: int, quick: bool) -> dict[str, Any]:
    history_jobs, n, times, seconds = (100_000, 300, 5, 10.0) if quick else (1_000_000, 1000, 10, 20.0)
    folder = Path(tempfile.mkdtemp(prefix="drvb-history-", dir="/tmp"))
    store = folder / "drover.db"
    try:
        print(f"B5: building a store of {history_jobs:,} ended jobs ...", file=sys.stderr, flush=True)
        built = history_store.build(str(store), history_jobs, SAMPLING)
        os.sync()
        print(f"B5: built in {built['total (s)']:.0f} s, {built['size (MiB)']:,.0f} MiB", file=sys.stderr, flush=True)
        figures: dict[str, dict[str, list[float]]] = {"fresh": {}, "history": {}}
        for _ in range(repeat):
            for kind in ("fresh", "history"):
                with configured_cluster(SAMPLING, store=store if kind == "history" else None) as c:
                    for key, value in measure(c, n, times).items():
                        figures[kind].setdefault(key, []).append(value)
                print(f"B5 {kind}: {({key: round(v[-1], 2) for key, v in figures[kind].items()})}", file=sys.stderr,
                      flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    cpu: dict[str, dict[str, list[float]]] = {"on": {}, "off": {}}
    for _ in range(repeat):
        for kind, config in (("on", SAMPLING), ("off", NO_SAMPLING)):
            for process, percent in running_cpu(config, 100, seconds).items():
                cpu[kind].setdefault(process, []).append(percent)
            print(f"B5 CPU, sampling {kind}: {({p: round(v[-1], 2) for p, v in cpu[kind].items()})}", file=sys.stderr,
                  flush=True)
    fresh, history = figures["fresh"], figures["history"]
    ratio = {key: [h / f for h, f in zip(history[key], fresh[key])] for key in fresh}
    return {
        "history (ended jobs)": history_jobs, "history store built in (s)": built["total (s)"],
        "history store (MiB)": built["size (MiB)"], "array jobs": n, "cold runs per latency": times,
        "fresh: array (jobs/s)": summary(fresh["rate"]), "history: array (jobs/s)": summary(history["rate"]),
        "array history/fresh": summary(ratio["rate"]),
        "fresh: drover status (ms)": summary(fresh["status"]), "history: drover status (ms)": summary(history["status"]),
        "status history/fresh": summary(ratio["status"]),
        "fresh: drover submit (ms)": summary(fresh["submit"]), "history: drover submit (ms)": summary(history["submit"]),
        "submit history/fresh": summary(ratio["submit"]),
        "CPU seconds measured": seconds,
        "100 running, sample_s=1: controller (% core)": summary(cpu["on"]["controller"]),
        "100 running, sample_s=1: execd (% core)": summary(cpu["on"]["execd"]),
        "100 running, no sampling: controller (% core)": summary(cpu["off"]["controller"]),
        "100 running, no sampling: execd (% core)": summary(cpu["off"]["execd"]),
    }
