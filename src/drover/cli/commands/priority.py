"""drover priority: each pending job's priority, factor by factor, and the total (like sprio)."""

from __future__ import annotations

from drover.cli.common import client, job_ids, parser, print_json


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Show pending jobs' multifactor priority: the age, fair-share, queue and job factors, "
                        "the weights of [scheduler] in drover.toml, and the total the scheduler orders by.")
    p.add_argument("jobs", nargs="*", metavar="JOB", help="only these jobs")
    p.add_argument("-u", "--user", help="another user's jobs (admins only)")
    args = p.parse_args(argv)
    wanted = set(job_ids(args.jobs)) if args.jobs else None
    with client() as api:
        listed = api.priority(args.user)
    rows = [row for row in listed.jobs if wanted is None or row.job_id in wanted]
    if args.json:
        from drover.protocol.api import PriorityList

        print_json(PriorityList(listed.weights, rows))
        return 0
    from drover.cli.render import table

    w = listed.weights
    print(f"weights: age {w.age:g} (max age {w.max_age_s:g}s), fairshare {w.fairshare:g}, "
          f"queue {w.queue:g}, job {w.job:g}")
    table(["JOBID", "USER", "QUEUE", "PRIORITY", "AGE", "FAIRSHARE", "QUEUE_F", "JOB"],
          [(r.job_id, r.owner, r.queue, f"{r.total:.2f}", f"{w.age * r.age:.2f}", f"{w.fairshare * r.fairshare:.2f}",
            f"{w.queue * r.queue_factor:.2f}", f"{w.job * r.job:.2f}") for r in rows])
    return 0
