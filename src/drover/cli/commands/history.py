"""drover history: ended attempts with their exit status and usage, filtered by user, queue,
node, state, time and job name, or summarised per user, queue, node or day (docs/accounting.md).
The controller filters and groups; only the page or the groups come back."""

from __future__ import annotations

import argparse
import time
from typing import Any

from drover.cli.common import client, parser, print_json, whole_number

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import HistoryGroup, HistoryRow

BY_TITLE = {"user": "USER", "queue": "QUEUE", "node": "NODE", "day": "DAY"}


def run(command: str, argv: list[str]) -> int:
    from drover.core.accounting import GROUPINGS, TIME_FORMATS

    p = parser(command, "Ended jobs, newest last: exit status, times, CPU user/sys, max RSS; or, with --by, "
                        "what they used per user, queue, node or day.")
    p.add_argument("-u", "--user", help="only this user's jobs (others' need an operator)")
    p.add_argument("-q", "--queue", help="only jobs that ran in this queue")
    p.add_argument("--node", help="only attempts that ran on this node")
    p.add_argument("-s", "--state", help="only attempts that ended so: a comma list (completed,failed,"
                                         "cancelled,timeout,out_of_memory,node_fail,requeued)")
    p.add_argument("--since", help=f"only attempts that ended at or after this time: {TIME_FORMATS}")
    p.add_argument("--until", help="only attempts that ended before this time (same forms)")
    p.add_argument("--name", metavar="PATTERN", help="only jobs whose name matches this glob (* ? [...])")
    p.add_argument("-j", "--job", type=whole_number(1), help="only this job's attempts")
    p.add_argument("--by", choices=GROUPINGS, help="summarise per user, queue, node or day (local time) instead")
    p.add_argument("--csv", action="store_true", help="print CSV for spreadsheets")
    p.add_argument("-n", "--limit", type=whole_number(1), default=50, help="how many attempts (default 50)")
    args = p.parse_args(_joined_times(argv))
    filters = _filters(p, args)
    with client() as api:
        if args.by:
            summary = api.history_summary(by=args.by, **filters)
            return _summary(args, summary.by, summary.groups)
        rows = api.history(limit=args.limit, **filters)
    return _rows(args, rows)


def _joined_times(argv: list[str]) -> list[str]:
    """`--since -7d` as `--since=-7d`: a time "ago" starts with a dash, as options do."""
    out: list[str] = []
    for word in argv:
        if out and out[-1] in ("--since", "--until") and word.startswith("-"):
            out[-1] = f"{out[-1]}={word}"
        else:
            out.append(word)
    return out


def _filters(p: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any]:
    from drover.core.accounting import parse_when

    now = time.time()
    found: dict[str, Any] = {"user": args.user, "queue": args.queue, "node": args.node, "name": args.name,
                             "job": args.job}
    if args.state:
        found["state"] = ",".join(word.strip().lower() for word in args.state.split(",") if word.strip())
    for key in ("since", "until"):
        text = getattr(args, key)
        if text is not None:
            try:
                found[key] = parse_when(text, now)
            except ValueError as error:
                p.error(f"--{key}: {error}")
    return {key: value for key, value in found.items() if value is not None}


def _rows(args: argparse.Namespace, rows: list[HistoryRow]) -> int:
    if args.json:
        print_json(rows)
        return 0
    if args.csv:
        fields = [name for name in rows[0].__struct_fields__ if name != "usage"] if rows else []
        _csv(fields, [[getattr(row, name) for name in fields] for row in rows])
        return 0
    if not rows:
        print("no attempt matches" if _filtered(args) else "no job has ended yet")
        return 0
    from drover.cli.render import elapsed, memory, seconds, table, when

    table(
        ["JOB", "NAME", "QUEUE", "STATE", "EXIT", "NODE", "STARTED", "WAIT", "ELAPSED", "USER CPU", "SYS CPU",
         "MAX RSS"],
        [
            (
                (f"{r.job_id}.{r.index}" if r.is_array else str(r.job_id)) + (f"#{r.attempt}" if r.attempt > 1 else ""),
                r.name, r.queue, r.state.upper(), r.exit_status, r.node, when(r.started_at),
                _duration(r.wait_s), elapsed(r.started_at, r.ended_at),
                seconds(r.usage.user_cpu_s if r.usage else None), seconds(r.usage.sys_cpu_s if r.usage else None),
                memory((r.usage.max_rss_kib or None) if r.usage else None),  # 0: not known (accounting.md)
            )
            for r in rows
        ],
        right=["EXIT", "WAIT", "ELAPSED", "USER CPU", "SYS CPU", "MAX RSS"],
    )
    return 0


def _summary(args: argparse.Namespace, by: str, groups: list[HistoryGroup]) -> int:
    if args.json:
        print_json({"by": by, "groups": [_plain(group) for group in groups]})
        return 0
    fields = ["key", "jobs", "attempts", "cpu_hours", "wall_hours", "wait_p50_s", "wait_p90_s",
              "cpu_efficiency_p50", "memory_efficiency_p50"]
    if args.csv:
        _csv([by, *fields[1:]], [[getattr(group, name) for name in fields] for group in groups])
        return 0
    if not groups:
        print("no attempt matches" if _filtered(args) else "no job has ended yet")
        return 0
    from drover.cli.render import table

    table(
        [BY_TITLE[by], "JOBS", "ATTEMPTS", "CPU HOURS", "WALL HOURS", "WAIT P50", "WAIT P90", "CPU EFF P50",
         "MEM EFF P50"],
        [
            (g.key, g.jobs, g.attempts, f"{g.cpu_hours:.2f}", f"{g.wall_hours:.2f}", _duration(g.wait_p50_s),
             _duration(g.wait_p90_s), _percent(g.cpu_efficiency_p50), _percent(g.memory_efficiency_p50))
            for g in groups
        ],
        right=["JOBS", "ATTEMPTS", "CPU HOURS", "WALL HOURS", "WAIT P50", "WAIT P90", "CPU EFF P50", "MEM EFF P50"],
    )
    return 0


def _plain(value: Any) -> Any:
    import msgspec

    return msgspec.to_builtins(value)


def _csv(header: list[str], rows: list[list[Any]]) -> None:
    import csv
    import sys

    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([["" if value is None else value for value in row] for row in rows])


def _filtered(args: argparse.Namespace) -> bool:
    return any(getattr(args, key) is not None for key in ("user", "queue", "node", "state", "since", "until",
                                                          "name", "job"))


def _duration(value: float | None) -> str:
    """Seconds as [D-]HH:MM:SS; - for none."""
    if value is None:
        return "-"
    whole = int(round(value))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return (f"{days}-" if days else "") + f"{hours:02d}:{minutes:02d}:{secs:02d}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"
