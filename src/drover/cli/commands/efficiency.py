"""drover efficiency JOB: what a job's tasks used against what they asked for (seff's report)."""

from __future__ import annotations

import grp
import pwd

from drover.cli.common import client, parser, print_json
from drover.core.errors import NotFound


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "What a job used against what it asked for: CPU against cores × wall time, and "
                        "peak memory against the request (Slurm's seff report), for each task.")
    p.add_argument("ref", metavar="JOB", help="a job (12), or one task of an array (12.3)")
    args = p.parse_args(argv)
    from drover.cli.efficiency import report
    from drover.core.ids import parse_job_ref

    job_id, index = parse_job_ref(args.ref)
    with client() as api:
        job = api.job(job_id)
    tasks = [t for t in job.tasks if index is None or t.index == index]
    if not tasks:
        raise NotFound(f"task {job_id}.{index} has not started yet" if index is not None
                       else f"job {job_id} has not started yet")
    reports = [report(job, task, _group_of(job.owner)) for task in tasks]
    if args.json:
        print_json([{"task": task.index, "report": lines} for task, lines in zip(tasks, reports)])
        return 0
    print("\n\n".join("\n".join(lines) for lines in reports))
    return 0


def _group_of(user: str) -> str:
    try:
        return grp.getgrgid(pwd.getpwnam(user).pw_gid).gr_name
    except KeyError:
        return user
