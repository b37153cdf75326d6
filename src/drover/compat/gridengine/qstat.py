"""qstat: the jobs that have not ended, in Grid Engine's table; `qstat -j N` for one job (exit
status 1, "Following jobs do not exist", once it is gone)."""

from __future__ import annotations

import sys
import time

from drover.core.errors import DroverError, NotFound

STATES = {"pending": "qw", "held": "hqw", "dispatched": "t", "running": "r", "suspended": "s",
          "completing": "r"}
HEADER = ("job-ID  prior   name       user         state submit/start at     queue                          "
          "slots ja-task-ID")


def _when(stamp: float) -> str:
    return time.strftime("%m/%d/%Y %H:%M:%S", time.localtime(stamp))


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        from drover.client.client import Client

        with Client() as client:
            if "-j" in args:
                return _one(client, args[args.index("-j") + 1])
            jobs = [client.transport.call("GET", f"/v1/jobs/{j['id']}")
                    for j in client.transport.call("GET", "/v1/jobs")["jobs"]]
    except DroverError as error:
        print(f"qstat: {error}", file=sys.stderr)
        return 1
    lines = []
    for job in jobs:
        for task in job["tasks"]:
            state = "Eqw" if task["state"] == "held" and task["exit_status"] == 100 else STATES.get(task["state"])
            if state is None:
                continue
            attempt = task["attempts"][-1] if task["attempts"] else None
            when = attempt["started_at"] if attempt and attempt.get("started_at") else job["submitted_at"]
            queue = f"{job.get('queue', 'default')}@{attempt['node']}" if attempt and state in ("r", "s", "t") else ""
            lines.append((job, state, when, queue, str(task["index"]) if job["array"] else ""))
        fresh = sum(n for s, n in job["task_counts"].items() if s in ("pending", "held"))
        fresh -= sum(1 for t in job["tasks"] if t["state"] in ("pending", "held"))
        if fresh > 0:
            state = "hqw" if job["task_counts"].get("held") else "qw"
            lines.append((job, state, job["submitted_at"], "", job["array"] or ""))
    if lines:
        print(HEADER)
        print("-" * len(HEADER))
    for job, state, when, queue, task in lines:
        print(f"{job['id']:>7} {0.5:.5f} {job['name'][:10]:<10} {job['owner'][:12]:<12} {state:<5} "
              f"{_when(when)} {queue:<30} {job['cpus']:>5} {task}")
    return 0


def _one(client: object, ref: str) -> int:
    job_id = int(ref.split(".")[0])
    try:
        job = client.transport.call("GET", f"/v1/jobs/{job_id}")  # type: ignore[attr-defined]
    except NotFound:
        job = None
    if job is None or job["ended_at"] is not None:
        print(f"Following jobs do not exist: \n{job_id}", file=sys.stderr)
        return 1
    print("=" * 62)
    for key, value in (("job_number", job["id"]), ("owner", job["owner"]), ("job_name", job["name"]),
                       ("submission_time", _when(job["submitted_at"])), ("cwd", job["workdir"]),
                       ("priority", job["priority"]), ("job-array tasks", job["array"] or None),
                       ("hard resource_list", f"h_rt={job['time_limit_s']}" if job["time_limit_s"] else None),
                       ("scheduling info", job["pending_explanation"])):
        if value is not None:
            print(f"{key + ':':<28}{value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
