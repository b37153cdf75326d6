"""qstat: jobs, queues and the server as PBS Pro's qstat shows them: the default table, -f's
attributes, -F json, -x for finished jobs, -t for subjobs, -u for a user's jobs, -Q queues and
-B the server."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.pbs.attributes import (
    attributes,
    cpu_used_s,
    flattened,
    letter,
    subjob_attributes,
)
from drover.compat.pbs.common import (
    EXIT_FINISHED,
    EXIT_UNKNOWN_JOB,
    failed,
    id_of,
    job_id,
    parse_ref,
    queue_name,
    server_name,
    subjob_state,
)
from drover.compat.pbs.common import (
    subjobs as all_subjobs,
)
from drover.compat.pbs.syntax import Given, PbsUsageError, last, parse, print_error
from drover.compat.pbs.values import hms
from drover.core.errors import DroverError, NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import JobInfo

OPTIONS = [
    Option(("-a",), Arity.NONE, Mark.SUPPORTED, "the alternate table (user, queue, CPUs, memory, times)"),
    Option(("-B",), Arity.NONE, Mark.SUPPORTED, "the server: its jobs by state"),
    Option(("-f",), Arity.NONE, Mark.SUPPORTED, "every attribute of each job"),
    Option(("-F",), Arity.REQUIRED, Mark.SUPPORTED, "`json` as PBS Pro writes it; `dsv` ✗", "json"),
    Option(("-H",), Arity.NONE, Mark.SUPPORTED, "finished jobs only"),
    Option(("-i",), Arity.NONE, Mark.SUPPORTED, "jobs that wait (queued, held, waiting)"),
    Option(("-J",), Arity.NONE, Mark.SUPPORTED, "arrays only"),
    Option(("-n",), Arity.NONE, Mark.SUPPORTED, "the hosts each job runs on, below it"),
    Option(("-p",), Arity.NONE, Mark.APPROXIMATED, "the Time Use column stays"),
    Option(("-Q",), Arity.NONE, Mark.SUPPORTED, "the queues"),
    Option(("-r",), Arity.NONE, Mark.SUPPORTED, "jobs that run"),
    Option(("-s",), Arity.NONE, Mark.SUPPORTED, "the scheduler's comment, below each job"),
    Option(("-t",), Arity.NONE, Mark.SUPPORTED, "each subjob of an array too"),
    Option(("-u",), Arity.REQUIRED, Mark.SUPPORTED, "these users' jobs", "user_list"),
    Option(("-w",), Arity.NONE, Mark.SUPPORTED, "wide columns"),
    Option(("-x",), Arity.NONE, Mark.SUPPORTED, "finished jobs too"),
    Option(("-1",), Arity.NONE, Mark.SUPPORTED, "-n's hosts on the job's line"),
    Option(("--version",), Arity.NONE, Mark.SUPPORTED, "prints `pbs_version =` Drover's version"),
]

USAGE = """usage:
qstat [-J] [-p] [-t] [-x] [-E] [-F format] [-D delim] [ job_identifier... | destination... ]
qstat -f [-F format] [-D delim] [-J] [-p] [-t] [-x] [-E] [-w] [-1] [ job_identifier... | destination... ]
qstat [-a|-i|-r|-H|-T] [-J] [-t] [-u user] [-n] [-s] [-G|-M] [-1] [-E] [-w] [ job_identifier... | destination... ]
qstat -Q [-f] [-F format] [-D delim] [ destination... ]
qstat -q [-G|-M] [ destination... ]
qstat -B [-f] [-F format] [-D delim] [ server_name... ]
qstat --version"""

WAITING = ("Q", "H", "W")
EXIT_UNKNOWN_QUEUE = 1  # qstat -Q of a queue that does not exist
RUNNING = ("R", "B", "E", "S")


def main(argv: list[str] | None = None) -> int:
    try:
        given, operands = parse("qstat", list(sys.argv[1:] if argv is None else argv), OPTIONS)
        form = last(given, "F")
        if form is not None and form.value != "json":
            raise PbsUsageError(f"qstat: -F {form.value}: Drover writes json only")
        keys = {g.key for g in given}
        if "version" in keys:
            from drover import __version__

            print(f"pbs_version = {__version__}")
            return 0
        from drover.client.client import Client

        with Client() as client:
            if "Q" in keys:
                return _queues(client, operands, "f" in keys, form is not None)
            if "B" in keys:
                return _server(client, "f" in keys, form is not None)
            return _jobs(client, given, operands)
    except PbsUsageError as error:
        return print_error(error, USAGE)
    except DroverError as error:
        return failed("qstat", error)


def _jobs(client: Client, given: list[Given], operands: list[str]) -> int:
    keys = {g.key for g in given}
    history = "x" in keys or "H" in keys
    status = 0
    selected: list[JobInfo] = []
    if operands:
        for word in operands:
            ref = parse_ref(word)
            if ref is None:
                print(f"qstat: illegally formed job identifier: {word}", file=sys.stderr)
                status = 1
                continue
            try:
                job = client.job(ref[0])
            except NotFound:
                print(f"qstat: Unknown Job Id {word}", file=sys.stderr)
                status = EXIT_UNKNOWN_JOB
                continue
            if job.ended_at is not None and not history:
                print(f"qstat: {word} Job has finished, use -x or -H to obtain historical job information",
                      file=sys.stderr)
                status = EXIT_FINISHED
                continue
            if ref[1] is not None:
                job = _only_subjob(job, ref[1])
                if not job.tasks:
                    print(f"qstat: Unknown Job Id {word}", file=sys.stderr)
                    status = EXIT_UNKNOWN_JOB
                    continue
            selected.append(job)
    else:
        users = [u for g in given if g.key == "u" and g.value for u in g.value.split(",")]
        listing = client.jobs(include_ended=history)
        if users:
            listing = [job for job in listing if job.owner in {u.split("@")[0] for u in users}]
        # A job's tasks and attempts (its CPU time, hosts, exit status) cost a request each: asked
        # only where the output shows them, or the job has begun (its Time Use).
        detailed = bool(keys & {"f", "F", "t", "n", "s"})
        selected = [client.job(job.id) if detailed or job.state not in ("pending", "held") else job
                    for job in listing]
    now = time.time()
    selected = [job for job in selected if _wanted(job, keys, now)]
    if last(given, "F") is not None:
        print(_json(selected, "t" in keys or any("[" in w and not w.split("[")[1].startswith("]") for w in operands),
                    now))
    elif "f" in keys:
        for job in selected:
            _full(job, "t" in keys, now)
    elif any(k in keys for k in ("a", "n", "s", "r", "i", "H")):
        _alternate(selected, keys, now)
    else:
        _table(selected, "t" in keys, "w" in keys, now)
    return status


def _only_subjob(job: JobInfo, index: int) -> JobInfo:
    """The job with only subjob `index` of its tasks (qstat `12[3]`)."""
    return type(job)(**{**{f: getattr(job, f) for f in job.__struct_fields__},
                        "tasks": [t for t in job.tasks if t.index == index]})


def _wanted(job: JobInfo, keys: set[str], now: float) -> bool:
    state = letter(job, now)
    if "H" in keys and state != "F":
        return False
    if "i" in keys and state not in WAITING:
        return False
    if "r" in keys and state not in RUNNING:
        return False
    return not ("J" in keys and job.array is None)


def _rows(job: JobInfo, subjobs: bool, now: float) -> list[tuple[str, JobInfo, str]]:
    """(id, job, state) of the job, then of each subjob when asked."""
    rows = [(id_of(job), job, letter(job, now))]
    if subjobs and job.array is not None:
        rows += [(job_id(job.id, True, t.index), job, subjob_state(t)) for t in all_subjobs(job)]
    return rows


def _time_use(job: JobInfo, state: str) -> str:
    attempts = [a for t in job.tasks for a in t.attempts]
    return hms(cpu_used_s(attempts)) if attempts else "0" if state in WAITING else "--"


def _table(jobs: list[JobInfo], subjobs: bool, wide: bool, now: float) -> None:
    """PBS Pro's default display: `Job id  Name  User  Time Use S Queue`."""
    if not jobs:
        return
    if wide:
        print(f"{'Job id':<30} {'Name':<15} {'User':<15} {'Time Use':>8} S {'Queue'}")
        print(f"{'-' * 30} {'-' * 15} {'-' * 15} {'-' * 8} - {'-' * 15}")
    else:
        print("Job id            Name             User              Time Use S Queue")
        print("----------------  ---------------- ----------------  -------- - -----")
    for job in jobs:
        for ident, info, state in _rows(job, subjobs, now):
            used = _time_use(info, state)
            if wide:
                print(f"{ident:<30} {info.name:<15} {info.owner:<15} {used:>8} {state} {queue_name(info.queue)}")
            else:
                print(f"{_cut(ident, 16):<16}  {_cut(info.name, 16):<16} {_cut(info.owner, 16):<16}  "
                      f"{used:>8} {state} {_cut(queue_name(info.queue), 5)}")


def _cut(text: str, width: int) -> str:
    """A field as PBS Pro fits it to its column: cut, with `*` where it was cut."""
    return text if len(text) <= width else text[:width - 1] + "*"


def _alternate(jobs: list[JobInfo], keys: set[str], now: float) -> None:
    """qstat -a (and -i, -r, -n, -s, -H): the alternate display, under the server's name."""
    print(f"\n{server_name()}: ")
    print(f"{'':60}Req'd  Req'd   Elap")
    print("Job ID          Username Queue    Jobname    SessID NDS TSK Memory Time  S Time")
    print("--------------- -------- -------- ---------- ------ --- --- ------ ----- - -----")
    for job in jobs:
        for ident, info, state in _rows(job, "t" in keys, now):
            attempts = [a for t in info.tasks for a in t.attempts]
            started = [a.started_at for a in attempts if a.started_at is not None]
            elapsed = hms(now - min(started))[:5] if started and state in RUNNING else "--"
            memory = f"{info.memory_mib}mb" if info.memory_mib else "--"
            limit = hms(info.time_limit_s)[:5] if info.time_limit_s else "--"
            nodes = str(max(info.cpus // info.pe_per_node, 1) if info.pe_per_node else 1)
            session = "--"
            print(f"{_cut(ident, 15):<15} {_cut(info.owner, 8):<8} {_cut(queue_name(info.queue), 8):<8} "
                  f"{_cut(info.name, 10):<10} {session:>6} {nodes:>3} {info.cpus:>3} {memory:>6} {limit:>5} "
                  f"{state} {elapsed:>5}")
            if "n" in keys and attempts:
                print(f"   {attempts[-1].node}/0*{info.cpus}")
            if "s" in keys:
                comment = attributes(info, now).get("comment")
                if comment:
                    print(f"   {comment}")


def _full(job: JobInfo, subjobs: bool, now: float) -> None:
    values = [(id_of(job), attributes(job, now))]
    if subjobs and job.array is not None:
        values += [(job_id(job.id, True, t.index), subjob_attributes(job, t, now)) for t in all_subjobs(job)]
    for ident, attrs in values:
        print(f"Job Id: {ident}")
        for key, text in flattened(attrs):
            print(f"    {key} = {text}")
        print()


def _json(jobs: list[JobInfo], subjobs: bool, now: float) -> str:
    """-F json, as PBS Pro writes it: timestamp, version, server, and the jobs by id."""
    from drover import __version__

    found: dict[str, Any] = {}
    for job in jobs:
        if job.array is not None and len(job.tasks) == 1 and subjobs:
            task = job.tasks[0]
            found[job_id(job.id, True, task.index)] = subjob_attributes(job, task, now)
            continue
        found[id_of(job)] = attributes(job, now)
        if subjobs and job.array is not None:
            for task in all_subjobs(job):
                found[job_id(job.id, True, task.index)] = subjob_attributes(job, task, now)
    document = {"timestamp": int(now), "pbs_version": __version__, "pbs_server": server_name(), "Jobs": found}
    return json.dumps(document, indent=4)


def _queues(client: Client, names: list[str], full: bool, as_json: bool) -> int:
    """qstat -Q: each queue's jobs by state."""
    queues = client.queues()
    jobs = client.jobs()
    wanted = {("default" if n == "workq" else n.partition("@")[0]) for n in names}
    unknown = wanted - {q.name for q in queues}
    for name in sorted(unknown):
        print(f"qstat: Unknown queue destination {name}", file=sys.stderr)
    rows = []
    now = time.time()
    for queue in queues:
        if wanted and queue.name not in wanted:
            continue
        mine = [job for job in jobs if job.queue == queue.name]
        counts = {s: sum(1 for j in mine if letter(j, now) in s) for s in ("Q", "RB", "H", "W", "E")}
        enabled = "no" if queue.state in ("draining", "inactive") else "yes"
        started = "no" if queue.state in ("stopped", "inactive") else "yes"
        rows.append((queue_name(queue.name), queue.max_running or 0, len(mine), enabled, started, counts))
    if as_json:
        print(json.dumps({"timestamp": int(now), "pbs_version": _version(), "pbs_server": server_name(),
                          "Queue": {name: {"queue_type": "Execution", "total_jobs": total,
                                           "state_count": " ".join(f"{k}:{v}" for k, v in _state_count(c).items()),
                                           "enabled": "True" if en == "yes" else "False",
                                           "started": "True" if st == "yes" else "False"}
                                    for name, _max, total, en, st, c in rows}}, indent=4))
    elif full:
        for name, _max, total, en, st, c in rows:
            print(f"Queue: {name}\n    queue_type = Execution\n    total_jobs = {total}")
            print(f"    state_count = {' '.join(f'{k}:{v}' for k, v in _state_count(c).items())}")
            print(f"    enabled = {'True' if en == 'yes' else 'False'}\n    started = {'True' if st == 'yes' else 'False'}\n")
    else:
        print("Queue              Max   Tot Ena Str   Que   Run   Hld   Wat   Trn   Ext Type")
        print("---------------- ----- ----- --- --- ----- ----- ----- ----- ----- ----- ----")
        for name, most, total, en, st, c in rows:
            print(f"{_cut(name, 16):<16} {most:>5} {total:>5} {en:>3} {st:>3} {c['Q']:>5} {c['RB']:>5} {c['H']:>5} "
                  f"{c['W']:>5} {0:>5} {c['E']:>5} Exec")
    return EXIT_UNKNOWN_QUEUE if unknown else 0


def _state_count(counts: dict[str, int]) -> dict[str, int]:
    return {"Transit": 0, "Queued": counts["Q"], "Held": counts["H"], "Waiting": counts["W"],
            "Running": counts["RB"], "Exiting": counts["E"], "Begun": 0}


def _version() -> str:
    from drover import __version__

    return __version__


def _server(client: Client, full: bool, as_json: bool) -> int:
    """qstat -B: the server and its jobs by state."""
    now = time.time()
    jobs = client.jobs()
    counts = {s: sum(1 for j in jobs if letter(j, now) in s) for s in ("Q", "RB", "H", "W", "E")}
    name = server_name()
    if as_json:
        print(json.dumps({"timestamp": int(now), "pbs_version": _version(), "pbs_server": name,
                          "Server": {name: {"server_state": "Active", "server_host": name, "total_jobs": len(jobs),
                                            "state_count": " ".join(f"{k}:{v}" for k, v in
                                                                    _state_count(counts).items()),
                                            "default_queue": "workq", "pbs_version": _version()}}}, indent=4))
    elif full:
        print(f"Server: {name}\n    server_state = Active\n    server_host = {name}\n    total_jobs = {len(jobs)}")
        print(f"    state_count = {' '.join(f'{k}:{v}' for k, v in _state_count(counts).items())}")
        print(f"    default_queue = workq\n    pbs_version = {_version()}\n")
    else:
        print("Server             Max   Tot   Que   Run   Hld   Wat   Trn   Ext Status")
        print("---------------- ----- ----- ----- ----- ----- ----- ----- ----- -----------")
        print(f"{_cut(name, 16):<16} {0:>5} {len(jobs):>5} {counts['Q']:>5} {counts['RB']:>5} {counts['H']:>5} "
              f"{counts['W']:>5} {0:>5} {counts['E']:>5} Active")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
