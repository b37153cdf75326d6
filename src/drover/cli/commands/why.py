"""drover why JOB: why each pending or held task of a job is not running, in full."""

from __future__ import annotations

from drover.cli.common import client, job_ids, parser, print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import Event

EVENT_PAGES = 20  # of 1000 events each: a job's hold events are read from its event log


def run(command: str, argv: list[str]) -> int:
    p = parser(command, "Say why each pending or held task of a job does not run, and what would change that.")
    p.add_argument("jobs", nargs="+", metavar="JOB")
    args = p.parse_args(argv)
    ids = job_ids(args.jobs)
    import time

    from drover.cli.why import ACTIVE_STATES, ENFORCED_EVENTS, HOLD_EVENTS, explain

    reports = []
    with client() as api:
        nodes = api.nodes()
        for job_id in ids:
            job = api.job(job_id)
            events: list[Event] = []
            # Holds say why held tasks wait; the node's actions on running ones (reniced, warned)
            # say why they run slower than they might.
            wanted = (HOLD_EVENTS if job.task_counts.get("held") else ()) + (
                tuple(ENFORCED_EVENTS) if any(job.task_counts.get(state) for state in ACTIVE_STATES) else ())
            if wanted:
                after = 0
                for _ in range(EVENT_PAGES):
                    page = api.events(job_id, after=after, limit=1000)
                    events.extend(event for event in page if event.kind in wanted)
                    if len(page) < 1000:
                        break
                    after = page[-1].seq
            reports.append((job, explain(job, events, nodes, time.time())))
    if args.json:
        data = [{"job": job.id, "state": job.state, "pending_reason": job.pending_reason, "why": lines}
                for job, lines in reports]
        print_json(data if len(data) > 1 else data[0])
        return 0
    print("\n\n".join("\n".join(lines) for _, lines in reports))
    return 0
