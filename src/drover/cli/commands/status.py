"""drover status: list jobs."""

from __future__ import annotations

from drover.cli.common import client, parser, print_json, whole_number
from drover.core.errors import BadRequest


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "List jobs that have not ended (with --all, ended ones too).")
    p.add_argument("-s", "--state", action="append", default=[], help="only jobs with tasks in this state (repeatable; comma lists too)")
    p.add_argument("-u", "--user", help="only this user's jobs")
    p.add_argument("-n", "--name", help="only jobs of this name")
    p.add_argument("-a", "--all", action="store_true", help="include ended jobs")
    p.add_argument("--limit", type=whole_number(1), default=1000, help="at most this many (the newest)")
    p.add_argument("--before", type=whole_number(1), metavar="JOB", help="only jobs older than this one (the next page)")
    p.add_argument("--watch", action="store_true",
                   help="then follow the jobs listed until they end, with a progress bar of their tasks on stderr "
                        "when it is a terminal")
    args = p.parse_args(argv)
    states = [state.strip().lower() for value in args.state for state in value.split(",") if state.strip()]
    from drover.core.job_state import JobState

    unknown = [state for state in states if state not in JobState.__members__.values()]
    if unknown:  # the listing would be empty, as if no job were in that state
        raise BadRequest(f"unknown state {unknown[0]!r}; the states are {', '.join(JobState)}")
    with client() as api:
        jobs = api.jobs(states=states, user=args.user, name=args.name, include_ended=args.all, limit=args.limit,
                        before=args.before)
        answered = api.transport.address
    if args.json:
        print_json(jobs)  # a list of jobs, as scripts read it: the cluster is in the text's last line
        return 0
    from drover.cli.render import elapsed, table
    from drover.cli.why import status_note

    rows = []
    for job in jobs:
        total = sum(job.task_counts.values())
        note = status_note(job)
        rows.append((
            job.id, job.name, job.owner, job.state.upper(), total, job.cpus,
            f"{job.memory_mib}M" if job.memory_mib else "-",
            elapsed(job.submitted_at, job.ended_at), note,
        ))
    if not rows:
        print("no jobs" if not args.all else "no jobs at all")
    else:
        table(["JOB", "NAME", "USER", "STATE", "TASKS", "CPUS", "MEM", "AGE", "NOTE"], rows,
              right=["JOB", "TASKS", "CPUS"])
    print(f"cluster: {which_cluster(answered)}")
    if args.watch and jobs:
        _watch([job.id for job in jobs])
    return 0


def which_cluster(address: str) -> str:
    """Which cluster answered, in words: "no jobs" from the shared cluster is not your own's."""
    import os

    from drover.config import SOCKET_VARIABLE, SYSTEM_STATE_DIR, Paths

    if os.environ.get(SOCKET_VARIABLE):
        return f"{address} (named by {SOCKET_VARIABLE})"
    if address == Paths().socket:
        return f"your personal cluster ({address})"
    if address == Paths(SYSTEM_STATE_DIR).socket:
        return f"the machine's shared cluster ({address})"
    return f"the cluster at {address}"


def _watch(job_ids: list[int]) -> None:
    import sys

    from drover.cli.progress import follow

    sys.stdout.flush()  # the table before the bar
    with client(timeout_s=None) as api:
        follow(api, job_ids)
