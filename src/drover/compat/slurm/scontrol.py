"""scontrol: show job, show hostnames, hold, release."""

from __future__ import annotations

import sys
import time

from drover.compat.slurm.common import REASONS, STATES, elapsed, fail
from drover.compat.slurm.hostlist import expand
from drover.core.errors import DroverError


def _when(stamp: object) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(float(stamp))) if stamp else "Unknown"  # type: ignore[arg-type]


def show_job(job: dict[str, object]) -> str:
    tasks = job["tasks"]
    attempt = next((t["attempts"][-1] for t in tasks if t["attempts"]), None)  # type: ignore[attr-defined]
    fields = [
        ("JobId", job["id"]), ("JobName", job["name"]), ("UserId", job["owner"]),
        ("Priority", job["priority"]), ("JobState", STATES.get(str(job["state"]), ("", "PENDING"))[1]),
        ("Reason", REASONS.get(str(job.get("pending_reason") or ""), "None")),
        ("ExitCode", f"{job['exit_status'] or 0}:0"), ("TimeLimit", elapsed(float(job["time_limit_s"])) if job["time_limit_s"] else "UNLIMITED"),  # type: ignore[arg-type]
        ("SubmitTime", _when(job["submitted_at"])), ("StartTime", _when(attempt and attempt.get("started_at"))),
        ("EndTime", _when(job.get("ended_at"))), ("Partition", job.get("queue", "default")),
        ("NodeList", attempt["node"] if attempt else "(null)"), ("NumNodes", 1), ("NumCPUs", job["cpus"]),
        ("MinMemoryNode", f"{job['memory_mib']}M"), ("WorkDir", job["workdir"]), ("StdOut", job["output"]),
        ("ArrayTaskId", job["array"] or None),
    ]
    words = [f"{key}={value}" for key, value in fields if value is not None]
    return "\n   ".join(" ".join(words[i:i + 4]) for i in range(0, len(words), 4)) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) >= 3 and args[0] == "show" and args[1] in ("hostnames", "hostname"):
        print("\n".join(expand(args[2])))
        return 0
    try:
        from drover.client.client import Client

        with Client() as client:
            if len(args) >= 2 and args[0] == "show" and args[1] == "job":
                ids = [args[2]] if len(args) > 2 else [str(j["id"]) for j in client.transport.call("GET", "/v1/jobs")["jobs"]]
                for job_id in ids:
                    print(show_job(client.transport.call("GET", f"/v1/jobs/{int(job_id.split('_')[0])}")))
                return 0
            if len(args) >= 2 and args[0] in ("hold", "release", "uhold", "requeue"):
                action = {"release": "release", "requeue": "requeue"}.get(args[0], "hold")
                results = client.action_json(action, [a.replace("_", ".") for a in args[1:]])
                bad = [r for r in results if not r["ok"]]
                for result in bad:
                    print(f"scontrol: error: {result['message']}", file=sys.stderr)
                return 1 if bad else 0
            if len(args) >= 3 and args[0] == "update":
                settings = dict(word.split("=", 1) for word in args[1:] if "=" in word)
                target = settings.get("JobId") or settings.get("JobID") or settings.get("jobid")
                if target and set(settings) - {"JobId", "JobID", "jobid"} == {"Priority"}:
                    (result,) = client.action_json("alter", [target.replace("_", ".")],
                                                   priority=int(settings["Priority"]))
                    return 0 if result["ok"] else fail("scontrol", result["message"])
    except DroverError as error:
        return fail("scontrol", str(error))
    return fail("scontrol", f"not supported by Drover: scontrol {' '.join(args)} "
                            "(supported: show job, show hostnames, hold, release, requeue, update JobId=N Priority=P)")


if __name__ == "__main__":
    raise SystemExit(main())
