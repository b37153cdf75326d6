"""B12: Drover inside one Slurm allocation against Slurm alone (`drover alloc`, docs/inside-slurm.md).

A private Slurm 22.05 on this host (tests/helpers/slurm_outer.py: its own munged, slurmctld and
one slurmd of 2 CPUs on loopback; as root, installed from Debian's packages where missing).
Slurm alone: 1,000 × /bin/true as one job array (`sbatch --array=1-1000 --wrap=/bin/true`, its
cheapest form), from the submission until squeue shows none of them. Drover: a personal cluster
serving TLS on loopback with no node of its own and an allocation queue of one worker
(`drover alloc add slurm --max-workers 1`); 1,000 × /bin/true as one array with a 1-minute
limit, from the submission until the last is recorded completed; this includes asking Slurm for
the allocation and the node joining, which is also given alone (submission → the node is up).
Jobs/s of each, and the ratio.

    .venv/bin/python bench/run.py B12 [--quick] [--repeat N]
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

JOBS = 1000


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _slurm_alone(slurm: Any, jobs: int) -> float:
    began = time.monotonic()
    slurm.run("sbatch", "--parsable", f"--array=1-{jobs}", "--output=/dev/null", "--job-name=alone",
              "--wrap=/bin/true")
    while any(name == "alone" for name, _ in slurm.live_jobs().values()):
        time.sleep(0.1)
    return time.monotonic() - began


def _drover_inside(drover: str, slurm: Any, jobs: int) -> tuple[float, float]:
    import tempfile

    from drover.client import Client

    root = Path(tempfile.mkdtemp(prefix="drvb-", dir="/tmp"))
    state = root / "state"
    state.mkdir()
    env = {**os.environ, "DROVER_STATE_DIR": str(state), "SLURM_CONF": str(slurm.conf)}
    env.pop("DROVER_SOCKET", None)
    controller = None
    try:
        subprocess.run([drover, "cluster", "init", "--state-dir", str(state)], env=env, check=True, capture_output=True)
        log = open(state / "controller.log", "ab")
        controller = subprocess.Popen([drover, "controller", "--state-dir", str(state), "--listen",
                                       f"127.0.0.1:{_free_port()}"], env=env, stdout=log, stderr=log,
                                      stdin=subprocess.DEVNULL)
        log.close()
        with Client(str(state / "api.sock"), timeout_s=600) as client:
            deadline = time.monotonic() + 30
            while True:
                try:
                    client.ping()
                    break
                except Exception:  # not listening yet
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            subprocess.run([drover, "alloc", "add", "slurm", "--time-limit", "30m", "--max-workers", "1",
                            "--idle-timeout", "10s"], env=env, check=True, capture_output=True)
            began = time.monotonic()
            submitted = subprocess.run([drover, "submit", "--parsable", "--array", f"1-{jobs}", "-t", "1m", "-o",
                                        "/dev/null", "--", "/bin/true"], env=env, check=True, capture_output=True,
                                       text=True, cwd=root)
            job = submitted.stdout.split()[0]
            joined = None
            while True:
                if joined is None and any(node.name.startswith("slurm-") and node.state == "up"
                                          for node in client.nodes()):
                    joined = time.monotonic() - began
                if client.job(job).state == "completed":
                    break
                time.sleep(0.05)
            return time.monotonic() - began, joined if joined is not None else float("nan")
    finally:
        subprocess.run([drover, "alloc", "remove", "1"], env=env, capture_output=True)
        deadline = time.monotonic() + 60
        while any(name.startswith("drover-") for name, _ in slurm.live_jobs().values()) and time.monotonic() < deadline:
            time.sleep(0.2)
        if controller is not None:
            controller.terminate()
            controller.wait(timeout=30)
        import shutil

        shutil.rmtree(root, ignore_errors=True)


def run(drover: str, repeat: int, quick: bool) -> dict[str, Any]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.helpers.slurm_outer import Slurm

    jobs = 200 if quick else JOBS
    slurm = Slurm().start()
    alone: list[float] = []
    inside: list[float] = []
    joining: list[float] = []
    try:
        for _ in range(repeat):
            took, joined = _drover_inside(drover, slurm, jobs)
            inside.append(jobs / took)
            joining.append(joined)
            alone.append(jobs / _slurm_alone(slurm, jobs))
    finally:
        slurm.stop()

    def summary(samples: list[float]) -> dict[str, Any]:
        return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "samples": samples}

    return {"jobs": jobs, "Slurm alone, array (jobs/s)": summary(alone),
            "Drover inside one allocation, array (jobs/s)": summary(inside),
            "of which: submission -> the allocation's node is up (s)": summary(joining),
            "Drover inside / Slurm alone": statistics.median(inside) / statistics.median(alone)}
