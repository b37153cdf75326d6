"""drover alloc add|list|info|pause|resume|remove: allocation queues (admins). While jobs wait
that a new node could run, the controller asks an outer scheduler (Slurm, PBS or LSF) for
allocations; each starts `drover alloc worker` on its nodes, which join the cluster as ordinary
nodes (slurm-<job id>-<n>, pbs-..., lsf-...) until the allocation's end or until they are idle
(docs/inside-slurm.md).

`drover alloc worker` is what runs inside an allocation (cli/alloc_worker.py)."""

from __future__ import annotations

import argparse
import sys

from drover.cli.common import client, parser, print_json, whole_number

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.protocol.api import AllocQueueInfo

ACTIONS = ("add", "list", "info", "pause", "resume", "remove", "worker")


def run(command: str, argv: list[str]) -> int:
    if argv[:1] == ["worker"]:
        from drover.cli.alloc_worker import run as run_worker

        return run_worker(f"{command} worker", argv[1:])
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1:]
    p = parser(command, "Allocation queues (admins): nodes asked of an outer scheduler while jobs wait. "
                        "`drover alloc add slurm [--partition P] [--time-limit 1h] [--workers-per-alloc N] "
                        "[--max-workers M] [--backlog B] [--idle-timeout 5m] [-- SBATCH ARGS]` "
                        "(pbs, lsf: --queue Q instead of --partition; -- QSUB or BSUB ARGS), "
                        "`drover alloc list`, `drover alloc info|pause|resume|remove ID`.")
    p.add_argument("action", choices=ACTIONS)
    p.add_argument("target", nargs="?", metavar="MANAGER|ID",
                   help="add: the outer scheduler (slurm, pbs, lsf); info, pause, resume, remove: the queue's id")
    p.add_argument("--partition", help="add, slurm: the partition to ask")
    p.add_argument("--queue", help="add, pbs or lsf: the queue to ask")
    p.add_argument("--time-limit", default="1h", help="add: each allocation's time limit: 30m, 1h, 1h30m (default 1h)")
    p.add_argument("--workers-per-alloc", type=whole_number(1, 1000), default=1,
                   help="add: nodes in each allocation (default 1)")
    p.add_argument("--max-workers", type=whole_number(1, 100_000), default=4,
                   help="add: nodes of this queue at once, queued or running (default 4)")
    p.add_argument("--backlog", type=whole_number(1, 1000), default=1,
                   help="add: allocations waiting in the outer queue at once (default 1)")
    p.add_argument("--idle-timeout", default="5m", help="add: a node idle this long leaves and its allocation "
                                                        "ends (default 5m)")
    p.add_argument("--name", default="", help="add: a name for the queue, shown by list")
    args = p.parse_args(argv)
    if args.action != "add" and (args.partition is not None or args.queue is not None):
        p.error(f"{args.action} takes no --partition or --queue (add does)")
    if extra and args.action != "add":
        p.error("only add takes extra arguments for the outer scheduler (after --)")
    if args.action == "list":
        if args.target is not None:
            p.error("list takes no id")
        with client() as api:
            queues = api.alloc_queues()
        if args.json:
            print_json(queues)
        else:
            _table(queues)
        return 0
    if args.target is None:
        p.error(f"{args.action} needs {'the outer scheduler (slurm, pbs, lsf)' if args.action == 'add' else 'a queue id'}")
    if args.action == "add":
        return _add(p, args, extra)
    queue_id = _queue_id(p, args.target)
    with client() as api:
        if args.action == "info":
            info = api.alloc_queue(queue_id)
        elif args.action == "remove":
            info = api.remove_alloc_queue(queue_id)
        else:
            info = api.switch_alloc_queue(queue_id, args.action)
    if args.json:
        print_json(info)
    else:
        _show(info)
    return 0


def _queue_id(p: argparse.ArgumentParser, text: str) -> int:
    try:
        return whole_number(1)(text)
    except argparse.ArgumentTypeError as error:
        p.error(f"the queue's id: {error}")
        raise


def _add(p: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> int:
    from drover.core.allocations import QueueParams, parse_duration
    from drover.protocol.api import AllocQueueRequest

    try:
        time_limit, idle = parse_duration(args.time_limit), parse_duration(args.idle_timeout)
    except ValueError as error:
        p.error(str(error))
    # Slurm has partitions, PBS and LSF queues: each takes its own word, stored alike.
    if args.partition is not None and args.target in ("pbs", "lsf"):
        p.error(f"{args.target} has queues, not partitions: say --queue {args.partition}")
    if args.queue is not None and args.target == "slurm":
        p.error(f"Slurm calls its queues partitions: say --partition {args.queue}")
    params = QueueParams(args.target, time_limit, args.workers_per_alloc, args.max_workers, args.backlog, idle,
                         args.partition if args.queue is None else args.queue, tuple(extra), args.name)
    problems = params.problems()
    if problems:
        p.error("; ".join(problems))
    request = AllocQueueRequest(manager=params.manager, time_limit_s=time_limit, workers_per_alloc=params.workers_per_alloc,
                                max_workers=params.max_workers, backlog=params.backlog, idle_timeout_s=idle,
                                partition=params.partition, extra_args=list(extra), name=params.name)
    with client() as api:
        info = api.add_alloc_queue(request)
    if args.json:
        print_json(info)
    else:
        print(f"Added allocation queue {info.id} ({info.manager})")
    return 0


def _duration(seconds: float) -> str:
    whole = int(seconds)
    if whole % 3600 == 0:
        return f"{whole // 3600}h"
    if whole % 60 == 0:
        return f"{whole // 60}m"
    return f"{whole}s"


def _table(queues: list[AllocQueueInfo]) -> None:
    from drover.cli.render import table

    table(["ID", "NAME", "MANAGER", "STATE", "TIME LIMIT", "WORKERS", "LIVE", "FAILURES", "LAST ERROR"],
          [(q.id, q.name or "-", q.manager, q.state, _duration(q.time_limit_s),
            f"{q.workers_per_alloc}/alloc, {q.max_workers} max",
            sum(1 for item in q.allocations if item.state in ("queued", "running")), q.failures, q.last_error)
           for q in queues])


def _show(info: AllocQueueInfo) -> None:
    from drover.cli.render import table, when

    shown = [("queue", f"{info.id}{' (' + info.name + ')' if info.name else ''}"), ("manager", info.manager),
             ("state", info.state), ("time limit", _duration(info.time_limit_s)),
             ("workers", f"{info.workers_per_alloc} per allocation, {info.max_workers} at most"),
             ("backlog", str(info.backlog)), ("idle timeout", _duration(info.idle_timeout_s)),
             ("partition" if info.manager == "slurm" else "queue", info.partition or "-"), ("extra arguments", " ".join(info.extra_args) or "-"),
             ("created", f"{when(info.created_at)} by {info.created_by}"), ("failures in a row", str(info.failures))]
    if info.backoff_until:
        shown.append(("next try", when(info.backoff_until)))
    if info.last_error:
        shown.append(("last error", f"{when(info.last_error_at)}: {info.last_error}"))
    for key, value in shown:
        print(f"{key + ':':<18} {value}")
    if info.allocations:
        print()
        sys.stdout.flush()
        table(["ALLOCATION", "STATE", "NODES", "SUBMITTED", "STARTED", "ENDED", "REASON"],
              [(a.outer_id, a.state, ",".join(a.nodes) or "-", when(a.submitted_at), when(a.started_at),
                when(a.ended_at), a.reason) for a in info.allocations])
