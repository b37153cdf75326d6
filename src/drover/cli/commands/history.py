"""drover history: ended attempts with their exit status and usage."""

from __future__ import annotations

from drover.cli.common import client, parser, print_json, whole_number


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Ended jobs, newest last: exit status, times, CPU user/sys, max RSS.")
    p.add_argument("-u", "--user", help="only this user's jobs")
    p.add_argument("-n", "--limit", type=whole_number(1), default=50, help="how many attempts (default 50)")
    args = p.parse_args(argv)
    with client() as api:
        rows = api.history(user=args.user, limit=args.limit)
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print("no job has ended yet")
        return 0
    from drover.cli.render import elapsed, memory, seconds, table, when

    table(
        ["JOB", "NAME", "STATE", "EXIT", "NODE", "STARTED", "ELAPSED", "USER CPU", "SYS CPU", "MAX RSS"],
        [
            (
                (f"{r.job_id}.{r.index}" if r.is_array else str(r.job_id)) + (f"#{r.attempt}" if r.attempt > 1 else ""),
                r.name, r.state.upper(), r.exit_status, r.node, when(r.started_at),
                elapsed(r.started_at, r.ended_at),
                seconds(r.usage.user_cpu_s if r.usage else None), seconds(r.usage.sys_cpu_s if r.usage else None),
                memory(r.usage.max_rss_kib if r.usage else None),
            )
            for r in rows
        ],
        right=["EXIT", "ELAPSED", "USER CPU", "SYS CPU", "MAX RSS"],
    )
    return 0
