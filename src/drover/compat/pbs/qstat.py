"""qstat: jobs, queues and the server as PBS Pro's qstat shows them: the default table, -f's
attributes, -F json, -x for finished jobs, -t for subjobs, -u for a user's jobs, -Q queues and
-B the server."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
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
    PBSE_UNKQUE,
    id_of,
    job_id,
    parse_ref,
    queue_name,
    run,
    server_name,
    subjob_state,
)
from drover.compat.pbs.common import (
    subjobs as all_subjobs,
)
from drover.compat.pbs.syntax import Given, PbsUsageError, last
from drover.compat.pbs.values import hms
from drover.core.errors import NotFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import JobInfo, TaskInfo

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
EXIT_UNKNOWN_QUEUE = PBSE_UNKQUE % 256  # qstat -Q of a queue that does not exist
RUNNING = ("R", "B", "E", "S")


def main(argv: list[str] | None = None) -> int:
    return run("qstat", argv, OPTIONS, USAGE, _act, _check)


def _check(given: list[Given], _operands: list[str]) -> None:
    form = last(given, "F")
    if form is not None and form.value != "json":
        raise PbsUsageError(f"qstat: -F {form.value}: Drover writes json only")


def _act(client: Client, given: list[Given], operands: list[str]) -> int:
    keys = {g.key for g in given}
    form = last(given, "F") is not None
    if "Q" in keys:
        return _queues(client, operands, "f" in keys, form)
    if "B" in keys:
        return _server(client, "f" in keys, form)
    return _jobs(client, given, operands)


def _jobs(client: Client, given: list[Given], operands: list[str]) -> int:
    keys = {g.key for g in given}
    history = "x" in keys or "H" in keys
    status = 0
    selected: list[JobInfo] = []
    named_subjobs: dict[int, TaskInfo] = {}  # job id → the subjob an operand (`12[3]`) named
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
                subjob = next((t for t in all_subjobs(job) if t.index == ref[1]), None)
                if subjob is None:
                    print(f"qstat: Unknown Job Id {word}", file=sys.stderr)
                    status = EXIT_UNKNOWN_JOB
                    continue
                named_subjobs[job.id] = subjob
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
    entries = [entry for job in selected for entry in _entries(job, "t" in keys, named_subjobs.get(job.id), now)]
    if last(given, "F") is not None:
        print(_json(entries, now))
    elif "f" in keys:
        _full(entries, now)
    elif any(k in keys for k in ("a", "n", "s", "r", "i", "H")):
        _alternate(entries, keys, now)
    else:
        _table(entries, "w" in keys)
    return status


@dataclass(frozen=True)
class Entry:
    """One line (or record) of qstat: a job, or one subjob of an array (`task`)."""

    ident: str
    job: JobInfo
    state: str
    task: TaskInfo | None = None

    def attributes(self, now: float) -> dict[str, Any]:
        return attributes(self.job, now) if self.task is None else subjob_attributes(self.job, self.task, now)


def _entries(job: JobInfo, with_subjobs: bool, named: TaskInfo | None, now: float) -> list[Entry]:
    """The job, then each of its subjobs when asked (-t); only the subjob an operand named."""
    if named is not None:
        return [Entry(job_id(job.id, True, named.index), job, subjob_state(named), named)]
    out = [Entry(id_of(job), job, letter(job, now))]
    if with_subjobs and job.array is not None:
        out += [Entry(job_id(job.id, True, t.index), job, subjob_state(t), t) for t in all_subjobs(job)]
    return out


def _wanted(job: JobInfo, keys: set[str], now: float) -> bool:
    state = letter(job, now)
    if "H" in keys and state != "F":
        return False
    if "i" in keys and state not in WAITING:
        return False
    if "r" in keys and state not in RUNNING:
        return False
    return not ("J" in keys and job.array is None)


def _time_use(job: JobInfo, state: str) -> str:
    attempts = [a for t in job.tasks for a in t.attempts]
    return hms(cpu_used_s(attempts)) if attempts else "0" if state in WAITING else "--"


def _table(entries: list[Entry], wide: bool) -> None:
    """PBS Pro's default display: `Job id  Name  User  Time Use S Queue`."""
    if not entries:
        return
    if wide:
        print(f"{'Job id':<30} {'Name':<15} {'User':<15} {'Time Use':>8} S {'Queue'}")
        print(f"{'-' * 30} {'-' * 15} {'-' * 15} {'-' * 8} - {'-' * 15}")
    else:
        print("Job id            Name             User              Time Use S Queue")
        print("----------------  ---------------- ----------------  -------- - -----")
    for entry in entries:
        info, state = entry.job, entry.state
        used = _time_use(info, state)
        if wide:
            print(f"{entry.ident:<30} {info.name:<15} {info.owner:<15} {used:>8} {state} {queue_name(info.queue)}")
        else:
            print(f"{_cut(entry.ident, 16):<16}  {_cut(info.name, 16):<16} {_cut(info.owner, 16):<16}  "
                  f"{used:>8} {state} {_cut(queue_name(info.queue), 5)}")


def _cut(text: str, width: int) -> str:
    """A field as PBS Pro fits it to its column: cut, with `*` where it was cut."""
    return text if len(text) <= width else text[:width - 1] + "*"


def _alternate(entries: list[Entry], keys: set[str], now: float) -> None:
    """qstat -a (and -i, -r, -n, -s, -H): the alternate display, under the server's name."""
    print(f"\n{server_name()}: ")
    print(f"{'':60}Req'd  Req'd   Elap")
    print("Job ID          Username Queue    Jobname    SessID NDS TSK Memory Time  S Time")
    print("--------------- -------- -------- ---------- ------ --- --- ------ ----- - -----")
    for entry in entries:
        ident, info, state = entry.ident, entry.job, entry.state
        attempts = [a for t in info.tasks for a in t.attempts if a.after is None]  # not a promised one: queued
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
            comment = entry.attributes(now).get("comment")
            if comment:
                print(f"   {comment}")


def _full(entries: list[Entry], now: float) -> None:
    for entry in entries:
        print(f"Job Id: {entry.ident}")
        for key, text in flattened(entry.attributes(now)):
            print(f"    {key} = {text}")
        print()


def _json(entries: list[Entry], now: float) -> str:
    """-F json, as PBS Pro writes it: timestamp, version, server, and the jobs by id."""
    document = {"timestamp": int(now), "pbs_version": _version(), "pbs_server": server_name(),
                "Jobs": {entry.ident: entry.attributes(now) for entry in entries}}
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
    elif rows:
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
