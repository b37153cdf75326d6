"""drover cancel / hold / release JOB...: a whole job (12) or one task (12.3)."""

from __future__ import annotations

import sys

from drover.cli.common import client, parser, print_json, whole_number

_DESCRIPTIONS = {
    "cancel": "Cancel jobs or tasks. Pending ones end at once; running ones get SIGTERM, a grace "
              "period, then SIGKILL.",
    "hold": "Keep pending jobs or tasks from starting until released (one whose prolog runs is stopped first).",
    "release": "Let held jobs or tasks start.",
    "suspend": "Suspend running jobs or tasks: the whole attempt is frozen (its cgroup where there is one).",
    "resume": "Resume suspended jobs or tasks.",
    "requeue": "Stop running jobs or tasks (SIGTERM, grace, SIGKILL) and put them back in the queue.",
    "alter": "Change the priority or the queue of jobs that have tasks waiting (give --priority, --queue or both).",
    "checkpoint": ("Checkpoint running jobs: in their checkpoint environment (--checkpoint NAME), else with the "
                   "signal they were submitted with (--checkpoint-signal)."),
    "migrate": ("Checkpoint running jobs of a checkpoint environment, stop them and run them again as new "
                "attempts, which restart from the checkpoint (RESTARTED=1)."),
    "signal": ("Send a signal (e.g. USR1, or a number) to running jobs or tasks (one whose prolog runs gets it "
               "once its job has started): drover signal JOB... SIGNAL"),
}


def run(command: str, argv: list[str]) -> int:
    p = parser(command, _DESCRIPTIONS[command])
    p.add_argument("refs", nargs="+", metavar="JOB", help="a job id (12) or a task (12.3)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    if command == "alter":
        p.add_argument("--priority", type=whole_number(-1023, 1023), help="the new priority (-1023..1023)")
        p.add_argument("--queue", help="move the waiting tasks to this queue (drover queue list shows them)")
    args = p.parse_args(argv)
    if command == "alter" and args.priority is None and args.queue is None:
        p.error("give --priority N, --queue QUEUE or both")
    if command == "alter" and args.queue is not None and not args.queue.strip():
        p.error("--queue needs a queue name")
    from drover.core.ids import parse_job_ref

    signal_name = None
    if command == "signal":
        if len(args.refs) < 2:
            p.error("give the jobs and then the signal, e.g. drover signal 12 USR1")
        *args.refs, signal_name = args.refs
    for ref in args.refs:
        parse_job_ref(ref)  # a malformed id is refused before anything is sent
    with client() as api:
        results = api.action_json(command, args.refs, signal_name, getattr(args, "priority", None),
                                  getattr(args, "queue", None))
    failed = [result for result in results if not result["ok"]]
    if args.json:
        print_json(results)
    else:
        for result in results:
            if result["ok"] and not args.quiet:
                print(f"{result['ref']}: {result['message']}")
            elif not result["ok"]:
                print(f"drover {command}: {result['message']}", file=sys.stderr)
    return 1 if failed else 0
