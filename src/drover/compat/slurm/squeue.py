"""squeue: pending and running jobs in Slurm's columns. Array tasks that run are `JOB_INDEX`;
the ones that wait are one line, `JOB_[RANGE]`, as Slurm shows them."""

from __future__ import annotations

import argparse
import os
import pwd
import sys
import time

from drover.compat.slurm.common import REASONS, STATES, elapsed, fail, slurm_id
from drover.core.errors import DroverError

DEFAULT_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
FIELDS = {  # -o letters
    "i": "JOBID", "A": "JOBID", "P": "PARTITION", "j": "NAME", "u": "USER", "t": "ST", "T": "STATE",
    "M": "TIME", "D": "NODES", "R": "NODELIST(REASON)", "C": "CPUS", "m": "MIN_MEMORY", "l": "TIME_LIMIT",
    "N": "NODELIST", "r": "REASON", "a": "ACCOUNT", "K": "ARRAY_TASK_ID", "F": "ARRAY_JOB_ID", "Q": "PRIORITY",
}
LONG_FIELDS = {  # -O names
    "jobid": "i", "partition": "P", "name": "j", "username": "u", "statecompact": "t", "state": "T",
    "timeused": "M", "numnodes": "D", "reasonlist": "R", "numcpus": "C", "minmemory": "m",
    "timelimit": "l", "nodelist": "N", "reason": "r", "arraytaskid": "K", "arrayjobid": "F", "priority": "Q",
}


def rows(jobs: list[dict[str, object]]) -> list[dict[str, str]]:
    out = []
    now = time.time()
    for job in jobs:
        tasks = job.get("tasks") or []
        listed = set()
        for task in tasks:  # type: ignore[attr-defined]
            if task["state"] in ("completed", "failed", "cancelled", "timeout", "out_of_memory", "node_fail"):
                listed.add(task["index"])
                continue
            attempt = task["attempts"][-1] if task["attempts"] else None
            listed.add(task["index"])
            out.append(_row(job, task["state"], slurm_id(job["id"], task["index"], bool(job["array"])),  # type: ignore[arg-type]
                            str(task["index"]) if job["array"] else "N/A", attempt, now))
        waiting = sum(n for state, n in job["task_counts"].items() if state in ("pending", "held"))  # type: ignore[attr-defined]
        waiting -= len([t for t in tasks if t["state"] in ("pending", "held")])  # type: ignore[attr-defined]
        if waiting > 0 and job["array"]:
            state = "held" if job["task_counts"].get("held") else "pending"  # type: ignore[attr-defined]
            out.append(_row(job, state, f"{job['id']}_[{job['array']}]", str(job["array"]), None, now))
        elif waiting > 0:
            out.append(_row(job, job["state"], str(job["id"]), "N/A", None, now))  # type: ignore[arg-type]
    return out


def _row(job: dict[str, object], state: str, ident: str, index: str, attempt: dict[str, object] | None,
         now: float) -> dict[str, str]:
    compact, long = STATES.get(state, ("PD", "PENDING"))
    reason = REASONS.get(str(job.get("pending_reason") or ""), "None")
    if state == "held":
        reason = "JobHeldUser"
    started = attempt.get("started_at") if attempt else None
    node = str(attempt["node"]) if attempt else ""
    return {
        "i": ident, "A": str(job["id"]), "P": str(job.get("queue", "default")), "j": str(job["name"]),
        "u": str(job["owner"]), "t": compact, "T": long, "M": _used(started, now), "D": "1",
        "R": node if compact in ("R", "CG", "S", "CF") else f"({reason})", "C": str(job["cpus"]),
        "m": f"{job['memory_mib']}M", "l": _limit(job.get("time_limit_s")), "N": node, "r": reason,
        "a": "(null)", "K": index, "F": str(job["id"]), "Q": str(job["priority"]),
    }


def _used(started: object, now: float) -> str:
    if not started:
        return "0:00"
    seconds = int(now - float(started))  # type: ignore[arg-type]
    days, seconds = divmod(seconds, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    text = f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"
    return f"{days}-{text}" if days else text


def _limit(seconds: object) -> str:
    return elapsed(float(seconds)) if seconds else "UNLIMITED"  # type: ignore[arg-type]


def render(fmt: str, row: dict[str, str] | None) -> str:
    """Slurm's -o format: %[.][width]letter, other text as it is."""
    out, i = [], 0
    while i < len(fmt):
        if fmt[i] != "%":
            out.append(fmt[i])
            i += 1
            continue
        j = i + 1
        right = fmt[j:j + 1] == "."
        j += right
        digits = ""
        while j < len(fmt) and fmt[j].isdigit():
            digits += fmt[j]
            j += 1
        letter = fmt[j:j + 1]
        i = j + 1
        text = FIELDS.get(letter, letter) if row is None else row.get(letter, "")
        if digits:
            width = int(digits)
            text = text[:width]
            text = text.rjust(width) if right else text.ljust(width)
        out.append(text)
    return "".join(out).rstrip()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="squeue", add_help=False)
    p.add_argument("-h", "--noheader", action="store_true")
    p.add_argument("-o", "--format")
    p.add_argument("-O", "--Format")
    p.add_argument("-t", "--states")
    p.add_argument("-u", "--user")
    p.add_argument("--me", action="store_true")
    p.add_argument("-j", "--jobs")
    p.add_argument("-r", "--array", action="store_true")
    p.add_argument("--help", action="help")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    fmt = args.format or DEFAULT_FORMAT
    if args.Format:
        fmt = " ".join("%." + (spec.split(":")[1] if ":" in spec else "20") + LONG_FIELDS.get(spec.split(":")[0].lower(), "i")
                       for spec in args.Format.split(","))
    try:
        from drover.client.client import Client

        with Client() as client:
            user = pwd.getpwuid(os.getuid()).pw_name if args.me else args.user
            ids = [int(x.split("_")[0]) for x in args.jobs.split(",")] if args.jobs else None
            everything = bool(args.states and args.states.lower() == "all") or bool(ids)
            listing = client.transport.call("GET", "/v1/jobs" + ("?all=1" if everything else ""))["jobs"]
            jobs = [client.transport.call("GET", f"/v1/jobs/{j['id']}") for j in listing
                    if (user is None or j["owner"] == user) and (ids is None or j["id"] in ids)]
    except DroverError as error:
        return fail("squeue", str(error))
    table = rows(jobs)
    if args.states and args.states.lower() != "all":
        wanted = {s.strip().upper() for s in args.states.split(",")}
        table = [r for r in table if r["t"] in wanted or r["T"] in wanted]
    if not args.noheader:
        print(render(fmt, None))
    for row in table:
        print(render(fmt, row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
