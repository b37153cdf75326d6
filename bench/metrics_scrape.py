"""B11: what serving /metrics costs the controller, scraped every 5 s as Prometheus would, with
10,000 jobs in its working set.

A personal cluster of 2 CPUs with `[controller] metrics_listen` on a free loopback port; 10,000
one-CPU `sleep` jobs in one request (2 run, 9,998 wait). Its controller's CPU time (utime +
stime, /proc) is read over a window without scrapes and over a window of the same length with a
GET /metrics every 5 s (Prometheus's Accept header, so OpenMetrics), the scrapes on schedule;
the difference, over the window, is the share of one core the scrapes cost. Then 20 scrapes
back to back give the CPU of one scrape, and the share it implies at one every 5 s (less noisy
than the windows, which the node's sampling and the machine's other work share).

    .venv/bin/python bench/run.py B11 [--quick] [--repeat N]
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

JOBS = 10_000
EVERY_S = 5.0
ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
          "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")  # what Prometheus 2.x sends


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _scrape(url: str) -> int:
    request = urllib.request.Request(url, headers={"Accept": ACCEPT})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return len(reply.read())


def _windows(pid: int, url: str, window_s: float) -> tuple[float, float, int]:
    """The controller's CPU seconds over `window_s` idle, then over `window_s` scraped every
    EVERY_S; and how many scrapes that was."""
    before = _cpu_seconds(pid)
    time.sleep(window_s)
    idle = _cpu_seconds(pid) - before
    began = time.monotonic()
    before = _cpu_seconds(pid)
    scrapes = 0
    while True:
        due = began + scrapes * EVERY_S
        if due >= began + window_s:
            break
        time.sleep(max(due - time.monotonic(), 0.0))
        _scrape(url)
        scrapes += 1
    time.sleep(max(began + window_s - time.monotonic(), 0.0))
    return idle, _cpu_seconds(pid) - before, scrapes


def run(drover: str, repeat: int, quick: bool) -> dict[str, Any]:
    from drover.client import Client

    root = Path(tempfile.mkdtemp(prefix="drvb-", dir="/tmp"))
    state = root / "state"
    state.mkdir()
    work = root / "work"
    work.mkdir()
    port = _free_port()
    (state / "drover.toml").write_text(f'[controller]\npublic_metrics = true\nmetrics_listen = "127.0.0.1:{port}"\n')
    env = dict(os.environ, DROVER_STATE_DIR=str(state))
    env.pop("DROVER_SOCKET", None)
    url = f"http://127.0.0.1:{port}/metrics"
    window_s = 30.0 if quick else 60.0
    shares: list[float] = []
    per_scrape_ms: list[float] = []
    implied: list[float] = []
    body = 0
    try:
        subprocess.run([drover, "up", "--cpus", "2"], env=env, cwd=work, check=True, capture_output=True)
        pid = int((state / "controller.pid").read_text().split()[0])
        with Client(str(state / "api.sock"), timeout_s=600) as client:
            job = {"script": "sleep 3600\n", "workdir": str(work), "output": "/dev/null"}
            ids = client.submit([job] * JOBS)  # type: ignore[list-item]
            deadline = time.monotonic() + 60
            while len(client.jobs(states=["running"], limit=10)) < 2 and time.monotonic() < deadline:
                time.sleep(0.2)
            body = _scrape(url)  # the first scrape imports the exposition library
            for _ in range(repeat):
                idle, scraped, scrapes = _windows(pid, url, window_s)
                shares.append(max(scraped - idle, 0.0) / window_s * 100)
                before = _cpu_seconds(pid)
                for _ in range(20):
                    _scrape(url)
                one = (_cpu_seconds(pid) - before) / 20
                per_scrape_ms.append(one * 1000)
                implied.append(one / EVERY_S * 100)
            client.cancel([str(job_id) for job_id in ids])
    finally:
        subprocess.run([drover, "down"], env=env, cwd=work, capture_output=True)
        from drover.config import Paths, default_spool

        shutil.rmtree(default_spool(Paths(str(state))), ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)

    def summary(samples: list[float]) -> dict[str, Any]:
        return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "samples": samples}

    return {"jobs": JOBS, "scrape every (s)": EVERY_S, "window (s)": window_s, "exposition (bytes)": body,
            "share of a core, scraped every 5 s (%)": summary(shares),
            "controller CPU per scrape (ms)": summary(per_scrape_ms),
            "share of a core it implies at one every 5 s (%)": summary(implied)}
