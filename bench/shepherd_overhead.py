"""Per-attempt overhead of the shepherd: fork server → shepherd → `/bin/true` (job started,
exit recorded in the spool), against starting the same job directly with posix_spawn.

    .venv/bin/python bench/shepherd_overhead.py [--runs 200] [--containment cgroup-v1|cgroup-v2|subreaper]
                                                [--job command|script] [--warm N]

`--job command` (the default) is what `drover submit -- /bin/true` stores, the line
`exec /bin/true`, and its reference is posix_spawn of /bin/true; `--job script` is a script
holding `/bin/true`, run by bash, and its reference is posix_spawn of bash on it. Wall time is
from the fork server's order to the shepherd's end (the order goes to a warm shepherd, forked
ahead of it, as on a node: `--warm 0` forks one per order instead); CPU is what the shepherds
and their jobs used (the fork server's children, from /proc), against what the references used.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import select
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from drover.execd.forkserver import ForkServer
from drover.execd.warm_shepherds import keep_for
from drover.shepherd.containment.common import remove_cluster_parents

JOBS = {"command": "exec /bin/true\n", "script": "/bin/true\n"}
OWNER = pwd.getpwuid(os.getuid()).pw_name  # a personal cluster's: the jobs are the node daemon's user's


def spool_for(root: Path, name: str, job: str = "command") -> Path:
    spool = root / name
    spool.mkdir()
    (spool / "job_script").write_text(JOBS[job])
    config = {
        "attempt": name, "job_id": 1, "task_index": 0, "attempt_number": 1, "is_array": False,
        "array_first": None, "array_last": None, "array_step": None, "array_count": None, "name": "bench",
        "owner": OWNER, "node": "n1", "workdir": str(root), "submit_dir": str(root), "stdout": "/dev/null",
        "stderr": None, "open_mode": "append", "environment": {"PATH": os.environ["PATH"]}, "cpus": 1,
        "cpu_ids": [0], "memory_mib": 0, "time_limit_s": None, "kill_grace_s": 1.0, "priority": 8,
    }
    (spool / "config").write_text(json.dumps(config))
    return spool


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--containment", help="force a backend (default: the best this host has)")
    parser.add_argument("--job", choices=sorted(JOBS), default="command",
                        help="a command line (exec'd without bash) or a script run by bash")
    parser.add_argument("--warm", type=int, default=keep_for(len(os.sched_getaffinity(0))),
                        help="shepherds the fork server keeps forked ahead (default: as a node of this host's CPUs)")
    args = parser.parse_args()
    if args.containment:
        os.environ["DROVER_CONTAINMENT"] = args.containment
    root = Path(tempfile.mkdtemp(prefix="drover-shepherd-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    server = ForkServer.start(warm=args.warm)
    shepherd_ms, spawn_ms = [], []
    server_children_cpu = _children_cpu_s(server.process.pid)
    reference_cpu = 0.0
    try:
        for n in range(args.runs):
            spool = spool_for(root, f"1.{n}.1", args.job)
            began = time.perf_counter()
            pid = server.spawn(str(spool))
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                pass  # ended, and reaped by the fork server, already
            else:
                select.select([fd], [], [])
                os.close(fd)
            shepherd_ms.append((time.perf_counter() - began) * 1000)
            assert (spool / "exit_status").exists()
            argv = ["/bin/true"] if args.job == "command" else ["/bin/bash", str(spool / "job_script")]
            began = time.perf_counter()
            _, _, usage = os.wait4(os.posix_spawn(argv[0], argv, dict(os.environ)), 0)
            spawn_ms.append((time.perf_counter() - began) * 1000)
            reference_cpu += usage.ru_utime + usage.ru_stime
        server_children_cpu = _children_cpu_s(server.process.pid) - server_children_cpu
    finally:
        server.close()
        shutil.rmtree(root, ignore_errors=True)
        remove_cluster_parents("")  # the slots' cpusets its attempts kept (containment/slots.py)

    def line(label: str, samples: list[float]) -> str:
        q = statistics.quantiles(samples, n=20)
        return (f"{label:<38} median {statistics.median(samples):6.2f} ms  "
                f"p5 {q[0]:6.2f}  p95 {q[-1]:6.2f}  min {min(samples):6.2f}  max {max(samples):6.2f}")

    backend = args.containment or "the best this host has"
    print(f"containment: {backend}; job: {args.job}; {args.runs} attempts, one at a time; {args.warm} warm")
    print(line("fork server -> shepherd -> job", shepherd_ms))
    print(line("posix_spawn of the job (reference)", spawn_ms))
    print(f"overhead per attempt: {statistics.median(shepherd_ms) - statistics.median(spawn_ms):.2f} ms "
          f"({statistics.median(shepherd_ms) / statistics.median(spawn_ms):.1f}x the direct start)")
    print(f"CPU per attempt: shepherd and job {server_children_cpu / args.runs * 1000:.2f} ms, "
          f"the reference {reference_cpu / args.runs * 1000:.2f} ms")
    return 0


def _children_cpu_s(pid: int) -> float:
    """The CPU time of the waited-for children of `pid` (cutime + cstime of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat", "rb") as file:
        fields = file.read().rsplit(b")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    raise SystemExit(main())
