"""Per-attempt overhead of the shepherd: fork server → shepherd → `/bin/true` (job started,
exit recorded in the spool), against starting the same job directly with posix_spawn.

    .venv/bin/python bench/shepherd_overhead.py [--runs 200] [--containment cgroup-v1|cgroup-v2|subreaper]
                                                [--job command|script] [--warm N] [--once]

`--job command` (the default) is what `drover submit -- /bin/true` stores, the line
`exec /bin/true`, and its reference is posix_spawn of /bin/true; `--job script` is a script
holding `/bin/true`, run by bash, and its reference is posix_spawn of bash on it. Wall time is
from the fork server's order to the attempt's end (its lifeline's end of file; the order goes to
a warm shepherd, forked ahead of it or back from the attempt before, as on a node: `--warm 0`
forks one per order instead, `--once` has each shepherd serve one attempt and exit, as before
shepherds served again); CPU is what the fork server, the shepherds and their jobs used over the
runs, against what the references used.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import resource
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
    parser.add_argument("--once", action="store_true",
                        help="each shepherd serves one attempt and exits (without: as on a node, it serves again)")
    args = parser.parse_args()
    if args.containment:
        os.environ["DROVER_CONTAINMENT"] = args.containment
    root = Path(tempfile.mkdtemp(prefix="drover-shepherd-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    server = ForkServer.start(warm=args.warm)
    shepherd_ms, spawn_ms = [], []
    # The CPU the fork server, its shepherds and their jobs spend over the runs: once the server
    # has exited (and reaped every shepherd, some of which serve attempt after attempt), all of it
    # is in our children's usage, with the references' and the server's own start-up's.
    server_start_cpu = _own_cpu_s(server.process.pid)
    children_before = _children_usage_s()
    reference_cpu = 0.0
    try:
        for n in range(args.runs):
            spool = spool_for(root, f"1.{n}.1", args.job)
            began = time.perf_counter()
            if args.once:
                pid = server.spawn(str(spool))
                try:
                    fd = os.pidfd_open(pid)
                except ProcessLookupError:
                    pass  # ended, and reaped by the fork server, already
                else:
                    select.select([fd], [], [])
                    os.close(fd)
            else:  # as a node does: the attempt's lifeline, and its shepherd released after it
                fd, given = os.pipe2(os.O_CLOEXEC)
                pid = server.spawn(str(spool), lifeline=given)
                os.close(given)
                select.select([fd], [], [])
                os.close(fd)
                server.release(pid)
            shepherd_ms.append((time.perf_counter() - began) * 1000)
            assert (spool / "exit_status").exists()
            argv = ["/bin/true"] if args.job == "command" else ["/bin/bash", str(spool / "job_script")]
            began = time.perf_counter()
            _, _, usage = os.wait4(os.posix_spawn(argv[0], argv, dict(os.environ)), 0)
            spawn_ms.append((time.perf_counter() - began) * 1000)
            reference_cpu += usage.ru_utime + usage.ru_stime
    finally:
        server.close()  # the shepherds waiting for another attempt exit, and the server reaps them
        shutil.rmtree(root, ignore_errors=True)
        remove_cluster_parents("")  # the slots' cpusets its attempts kept (containment/slots.py)
    server_children_cpu = _children_usage_s() - children_before - reference_cpu - server_start_cpu

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
    print(f"CPU per attempt: fork server, shepherd and job {server_children_cpu / args.runs * 1000:.2f} ms, "
          f"the reference {reference_cpu / args.runs * 1000:.2f} ms")
    return 0


def _own_cpu_s(pid: int) -> float:
    """utime + stime of process `pid` so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat", "rb") as file:
        fields = file.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_usage_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    raise SystemExit(main())
