"""qacct -j N: the accounting record of each ended task of a job, in Grid Engine's layout."""

from __future__ import annotations

import sys
import time

from drover.core.errors import DroverError, NotFound


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "-j" not in args or args.index("-j") + 1 >= len(args):
        print("qacct: only qacct -j JOB is supported", file=sys.stderr)
        return 1
    job_id = int(args[args.index("-j") + 1].split(".")[0])
    try:
        from drover.client.client import Client

        with Client() as client:
            job = client.transport.call("GET", f"/v1/jobs/{job_id}")
    except NotFound:
        job = None
    except DroverError as error:
        print(f"qacct: {error}", file=sys.stderr)
        return 1
    ended = [t for t in (job or {}).get("tasks", []) if t["attempts"] and t["attempts"][-1].get("ended_at")]
    if not ended:
        print(f"error: job id {job_id} not found", file=sys.stderr)
        return 1
    for task in ended:
        attempt = task["attempts"][-1]
        usage = attempt.get("usage") or {}
        failed = "0" if not attempt.get("failure") else f"1    : {attempt['failure']}"
        fields = [
            ("qname", job.get("queue", "default")), ("hostname", attempt["node"]), ("owner", job["owner"]),
            ("jobname", job["name"]), ("jobnumber", job["id"]),
            ("taskid", task["index"] if job["array"] else "undefined"),
            ("qsub_time", time.ctime(job["submitted_at"])),
            ("start_time", time.ctime(attempt["started_at"]) if attempt.get("started_at") else "-/-"),
            ("end_time", time.ctime(attempt["ended_at"])), ("failed", failed),
            ("exit_status", task["exit_status"] if task["exit_status"] is not None else 0),
            ("ru_wallclock", f"{usage.get('wall_s', 0):.3f}s"), ("ru_utime", f"{usage.get('user_cpu_s', 0):.3f}s"),
            ("ru_stime", f"{usage.get('sys_cpu_s', 0):.3f}s"), ("ru_maxrss", f"{usage.get('max_rss_kib', 0)}"),
            ("slots", job["cpus"]),
        ]
        print("=" * 62)
        for key, value in fields:
            print(f"{key:<13}{value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
