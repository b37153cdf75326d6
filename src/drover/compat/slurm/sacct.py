"""sacct: jobs, running or ended, in Slurm's accounting fields. Drover has no job steps, so
each job (each array task) is one line, as with `sacct -X`."""

from __future__ import annotations

import argparse
import os
import pwd
import sys
import time

from drover.compat.slurm.common import STATES, elapsed, fail, slurm_id
from drover.core.errors import DroverError

DEFAULT_FIELDS = ("JobID", "JobName", "Partition", "Account", "AllocCPUS", "State", "ExitCode")
WIDTHS = {"JobID": 12, "JobName": 10, "State": 10, "ExitCode": 8, "NodeList": 15, "Elapsed": 10}


def task_rows(job: dict[str, object]) -> list[dict[str, str]]:
    rows = []
    for task in job["tasks"]:  # type: ignore[attr-defined]
        attempt = task["attempts"][-1] if task["attempts"] else None
        usage = (attempt or {}).get("usage") or {}
        state = STATES.get(task["state"], ("PD", "PENDING"))[1]
        if task["state"] == "cancelled":
            state = f"CANCELLED by {pwd.getpwnam(str(job['owner'])).pw_uid if _known(job['owner']) else 0}"
        code = (attempt or {}).get("exit_code")
        signal = (attempt or {}).get("signal")
        started, ended = (attempt or {}).get("started_at"), (attempt or {}).get("ended_at")
        rows.append({
            "JobID": slurm_id(job["id"], task["index"], bool(job["array"])),  # type: ignore[arg-type]
            "JobIDRaw": str(job["id"]), "JobName": str(job["name"]), "Partition": str(job.get("queue", "default")),
            "Account": "", "AllocCPUS": str(job["cpus"]), "State": state,
            "ExitCode": f"{code or 0}:{signal or 0}", "Elapsed": elapsed((ended or time.time()) - started if started else None),
            "NodeList": str((attempt or {}).get("node") or "None assigned"), "User": str(job["owner"]),
            "MaxRSS": f"{usage['max_rss_kib']}K" if usage else "", "TotalCPU": elapsed(
                (usage.get("user_cpu_s", 0) + usage.get("sys_cpu_s", 0)) if usage else None),
            "Start": _when(started), "End": _when(ended), "Submit": _when(job["submitted_at"]),
            "Timelimit": elapsed(float(job["time_limit_s"])) if job.get("time_limit_s") else "UNLIMITED",  # type: ignore[arg-type]
            "ReqMem": f"{job['memory_mib']}M", "ArrayTaskID": str(task["index"]) if job["array"] else "",
        })
    return rows


def _known(user: object) -> bool:
    try:
        pwd.getpwnam(str(user))
        return True
    except KeyError:
        return False


def _when(stamp: object) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(float(stamp))) if stamp else "Unknown"  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="sacct")
    p.add_argument("-j", "--jobs", action="append")
    p.add_argument("-o", "--format")
    p.add_argument("-P", "--parsable2", action="store_true")
    p.add_argument("-p", "--parsable", action="store_true")
    p.add_argument("-n", "--noheader", action="store_true")
    p.add_argument("-X", "--allocations", action="store_true")
    p.add_argument("-u", "--user")
    p.add_argument("-a", "--allusers", action="store_true")
    p.add_argument("-S", "--starttime")
    p.add_argument("-E", "--endtime")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    args.jobs = ",".join(args.jobs) if args.jobs else None
    fields = [f.split("%")[0] for f in args.format.split(",")] if args.format else list(DEFAULT_FIELDS)
    try:
        from drover.client.client import Client

        with Client() as client:
            if args.jobs:
                ids = sorted({int(x.split("_")[0].split(".")[0]) for x in args.jobs.split(",")})
            else:
                ids = [j["id"] for j in client.transport.call("GET", "/v1/jobs?all=1")["jobs"]]
            jobs = [client.transport.call("GET", f"/v1/jobs/{job_id}") for job_id in ids]
    except DroverError as error:
        return fail("sacct", str(error))
    me = args.user or (None if args.allusers else pwd.getpwuid(os.getuid()).pw_name)
    rows = [row for job in jobs if me is None or args.jobs or job["owner"] == me for row in task_rows(job)]
    if args.jobs and "_" in args.jobs:
        wanted = set(args.jobs.split(","))
        rows = [r for r in rows if r["JobID"] in wanted or r["JobIDRaw"] in wanted]
    if args.parsable2 or args.parsable:
        end = "|" if args.parsable and not args.parsable2 else ""
        if not args.noheader:
            print("|".join(fields) + end)
        for row in rows:
            print("|".join(row.get(f, "") for f in fields) + end)
        return 0
    widths = [WIDTHS.get(f, 10) for f in fields]
    if not args.noheader:
        print(" ".join(f.rjust(w)[:w] if f != "JobID" else f.ljust(w) for f, w in zip(fields, widths)))
        print(" ".join("-" * w for w in widths))
    for row in rows:
        print(" ".join(row.get(f, "")[:w].ljust(w) if f in ("JobID", "JobName") else row.get(f, "")[:w].rjust(w)
                       for f, w in zip(fields, widths)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
