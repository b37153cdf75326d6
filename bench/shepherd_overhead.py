"""Per-attempt overhead of the shepherd: fork server → shepherd → `/bin/true` (job started,
exit recorded in the spool), against starting the same command directly with posix_spawn.

    .venv/bin/python bench/shepherd_overhead.py [--runs 200] [--containment cgroup-v1|cgroup-v2|subreaper]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from drover.execd.forkserver import ForkServer


def spool_for(root: Path, name: str) -> Path:
    spool = root / name
    spool.mkdir()
    (spool / "job_script").write_text("/bin/true\n")
    config = {
        "attempt": name, "job_id": 1, "task_index": 0, "attempt_number": 1, "is_array": False,
        "array_first": None, "array_last": None, "array_step": None, "array_count": None, "name": "bench",
        "owner": "bench", "node": "n1", "workdir": str(root), "submit_dir": str(root), "stdout": "/dev/null",
        "stderr": None, "open_mode": "append", "environment": {"PATH": os.environ["PATH"]}, "cpus": 1,
        "cpu_ids": [0], "memory_mib": 0, "time_limit_s": None, "kill_grace_s": 1.0, "priority": 8,
    }
    (spool / "config").write_text(json.dumps(config))
    return spool


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--containment", help="force a backend (default: the best this host has)")
    args = parser.parse_args()
    if args.containment:
        os.environ["DROVER_CONTAINMENT"] = args.containment
    root = Path(tempfile.mkdtemp(prefix="drover-shepherd-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    server = ForkServer.start()
    shepherd_ms, spawn_ms = [], []
    try:
        for n in range(args.runs):
            spool = spool_for(root, f"1.{n}.1")
            began = time.perf_counter()
            pid = server.spawn(str(spool))
            fd = os.pidfd_open(pid)
            select.select([fd], [], [])
            os.close(fd)
            shepherd_ms.append((time.perf_counter() - began) * 1000)
            assert (spool / "exit_status").exists()
            began = time.perf_counter()
            os.waitpid(os.posix_spawn("/bin/bash", ["bash", str(spool / "job_script")], dict(os.environ)), 0)
            spawn_ms.append((time.perf_counter() - began) * 1000)
    finally:
        server.close()
        shutil.rmtree(root, ignore_errors=True)

    def line(label: str, samples: list[float]) -> str:
        q = statistics.quantiles(samples, n=20)
        return (f"{label:<38} median {statistics.median(samples):6.2f} ms  "
                f"p5 {q[0]:6.2f}  p95 {q[-1]:6.2f}  min {min(samples):6.2f}  max {max(samples):6.2f}")

    backend = args.containment or "the best this host has"
    print(f"containment: {backend}; {args.runs} attempts, one at a time")
    print(line("fork server -> shepherd -> job", shepherd_ms))
    print(line("posix_spawn bash script (reference)", spawn_ms))
    print(f"overhead per attempt: {statistics.median(shepherd_ms) - statistics.median(spawn_ms):.2f} ms "
          f"({statistics.median(shepherd_ms) / statistics.median(spawn_ms):.1f}x the direct start)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
