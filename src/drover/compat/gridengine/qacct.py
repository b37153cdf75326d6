"""qacct: the accounting of ended jobs. `-j` prints a record per ended attempt of each task, in
qacct's showjob() layout (source/clients/qacct/qacct.c); without -j, the usage totals.
Selections: -j id, name or pattern; -o owner; -d days; -b and -e times; -t tasks; -q queue;
-h host; -slots."""

from __future__ import annotations

import fnmatch
import sys
import time
from dataclasses import dataclass
from typing import Any

from drover.compat.gridengine.common import ctime, queue_name
from drover.compat.gridengine.jobaction import usage
from drover.compat.gridengine.syntax import GeUsageError, Given, Operands, parse
from drover.compat.gridengine.values import task_indices
from drover.compat.optiontable import Arity, Mark, Option
from drover.core.accounting import never_ran
from drover.core.errors import DroverError, NotFound

N, R, OPT = Arity.NONE, Arity.REQUIRED, Arity.OPTIONAL
OK, APPROX, MEANINGLESS = Mark.SUPPORTED, Mark.APPROXIMATED, Mark.MEANINGLESS
OPTIONS = [
    Option(("-ar",), OPT, MEANINGLESS, "Drover has no advance reservations: no job has one", "[ar_id]"),
    Option(("-A",), R, MEANINGLESS, "every job's account is `sge`", "Account"),
    Option(("-b",), R, OK, "jobs that started at or after this time", "[[CC]YY]MMDDhhmm[.SS]"),
    Option(("-d",), R, OK, "jobs that started in the last so many days", "Days"),
    Option(("-D",), OPT, MEANINGLESS, "every job's department is `defaultdepartment`", "[Department]"),
    Option(("-e",), R, OK, "jobs that started before this time", "[[CC]YY]MMDDhhmm[.SS]"),
    Option(("-f",), R, MEANINGLESS, "the records come from the cluster, not from a file", "accounting_file"),
    Option(("-g",), OPT, APPROX, "no group column; the totals, with a warning", "[GroupId|GroupName]"),
    Option(("-h",), OPT, OK, "jobs that ran on this node", "[HostName]"),
    Option(("-help",), N, OK, "prints the usage"),
    Option(("-j",), OPT, OK, "the records of these jobs (id, name or pattern); all with no value",
           "[job_id|job_name|pattern]"),
    Option(("-l",), R, APPROX, "not a selection on Drover: ignored, with a warning", "attr=val,..."),
    Option(("-o",), OPT, OK, "this owner's jobs (with no value: totals per owner)", "[Owner]"),
    Option(("-pe",), OPT, APPROX, "not a selection on Drover: ignored, with a warning", "[PEname]"),
    Option(("-P",), OPT, MEANINGLESS, "every job's project is `NONE`", "[Project]"),
    Option(("-q",), OPT, OK, "jobs of this queue", "[wc_queue_name]"),
    Option(("-slots",), OPT, OK, "jobs with this many slots", "[SlotNumber]"),
    Option(("-t",), R, OK, "with -j: these tasks", "task_id_range_list"),
]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import AttemptInfo, HistoryRow, JobInfo, PeTaskInfo, TaskInfo


@dataclass(frozen=True)
class Record:
    job: JobInfo
    task: TaskInfo
    attempt: AttemptInfo


def main(argv: list[str] | None = None) -> int:
    try:
        parsed = parse(list(sys.argv[1:] if argv is None else argv), OPTIONS, Operands.NONE)
    except GeUsageError as error:
        print(error, file=sys.stderr)  # the error first, then the usage (as qacct -t does)
        print(usage("qacct", OPTIONS, ""), file=sys.stderr)
        return 1
    given = {g.key: g for g in parsed.given}
    if "help" in given:
        print(usage("qacct", OPTIONS, ""))
        return 0
    try:
        days = given["d"].value if "d" in given else None
        if days is not None and not (days.isascii() and days.isdigit() and 0 < int(days) <= 100_000):
            raise GeUsageError(f'ERROR! invalid option argument "-d {days}": the number of days must be a whole '
                               "number from 1 to 100000")
        for key in ("b", "e"):
            if key in given:
                ge_time(given[key].value or "")  # refused before the cluster is asked
        return _main(given)
    except GeUsageError as error:
        print(error, file=sys.stderr)  # the error first, then the usage (as qacct -t does)
        print(usage("qacct", OPTIONS, ""), file=sys.stderr)
        return 1
    except DroverError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


def ge_time(text: str) -> float:
    """qacct's -b/-e time: [[CC]YY]MMDDhhmm[.SS], in local time."""
    body, _, seconds = text.partition(".")
    if not text.isascii() or not body.isdigit() or len(body) not in (8, 10, 12) or (seconds and not seconds.isdigit()):
        raise GeUsageError(f'ERROR! invalid option argument "{text}": a time is [[CC]YY]MMDDhhmm[.SS]')
    now = time.localtime()
    if len(body) == 8:
        body = f"{now.tm_year}{body}"
    elif len(body) == 10:
        body = f"{str(now.tm_year)[:2]}{body}"
    try:
        return time.mktime(time.strptime(body + (seconds or "00"), "%Y%m%d%H%M%S"))
    except ValueError:
        raise GeUsageError(f'ERROR! invalid option argument "{text}": no such date or time') from None


def _main(given: dict[str, Given]) -> int:
    from drover.client.client import Client

    for key in ("l", "pe", "g"):
        if key in given:
            print(f"qacct: warning: -{key}: not a selection on Drover; ignored", file=sys.stderr)
    with Client() as client:
        if "j" in given:
            jobs, missing = _jobs(client, given)
            records = _selected([r for job in jobs for r in _records(job)], given)
            if not records:
                print(f"error: {missing}", file=sys.stderr)
                return 1
            for record in records:
                print(showjob(record, _group(record.job.owner)), end="")
            return 0
        rows = _rows_selected(client.history(limit=1_000_000, **_server_filters(given)), given)
    print(totals(rows, [key for key in ("h", "q", "o") if key in given]), end="")
    return 0


def _server_filters(given: dict[str, Given]) -> dict[str, Any]:
    """What the controller can select itself, from its accounting indexes: the owner, an exact
    queue and host, and the earliest end (a job that started at -b or -d ended after it)."""
    found: dict[str, Any] = {}
    since = _since(given)
    if since is not None:
        found["since"] = since
    owner = given["o"].value if "o" in given else None
    if owner:
        found["user"] = owner
    queue = given["q"].value if "q" in given else None
    if queue and not _is_pattern(queue):
        found["queue"] = "default" if queue == "all.q" else queue
    host = given["h"].value if "h" in given else None
    if host and not _is_pattern(host):
        found["node"] = host
    return found


def _is_pattern(text: str) -> bool:
    return any(mark in text for mark in "*?[")


def _since(given: dict[str, Given]) -> float | None:
    since = None
    if "d" in given:
        since = time.time() - float(given["d"].value or 0) * 86400
    if "b" in given:
        since = max(since or 0, ge_time(given["b"].value or ""))
    return since


def _jobs(client: Client, given: dict[str, Given]) -> tuple[list[JobInfo], str]:
    """The jobs -j names (those of the history the controller selects by name, owner and time),
    and qacct's words when none is found."""
    wanted = given["j"].value if "j" in given else None
    if wanted is not None and wanted.isascii() and wanted.isdigit():
        message = f"job id {wanted} not found"
        try:
            return [client.job(int(wanted))], message
        except NotFound:
            return [], message
    filters = _server_filters(given)
    if wanted:
        filters["name"] = wanted
    rows = client.history(limit=1_000_000, **filters)
    jobs = []
    for job_id in sorted({row.job_id for row in rows}):
        try:
            jobs.append(client.job(job_id))
        except NotFound:
            continue
    return jobs, f"job name {wanted} not found"


def _rows_selected(rows: list[HistoryRow], given: dict[str, Given]) -> list[HistoryRow]:
    """What the controller could not select: patterns, slots, and the start time window."""
    if "o" in given and given["o"].value:
        rows = [r for r in rows if r.owner == given["o"].value]
    if "h" in given and given["h"].value:
        rows = [r for r in rows if fnmatch.fnmatchcase(r.node, given["h"].value or "")]
    if "q" in given and given["q"].value:
        rows = [r for r in rows if fnmatch.fnmatchcase(_queue(r.queue), given["q"].value or "")]
    if "slots" in given and given["slots"].value:
        rows = [r for r in rows if str(r.cpus) == given["slots"].value]
    since = _since(given)
    if since is not None:
        rows = [r for r in rows if (r.started_at or r.ended_at or 0) >= since]
    if "e" in given:
        until = ge_time(given["e"].value or "")
        rows = [r for r in rows if (r.started_at or r.ended_at or 0) < until]
    return rows


def _queue(name: str) -> str:
    return "all.q" if name == "default" else name


def _records(job: JobInfo) -> list[Record]:
    """A record for each ended attempt, and, after it, one for each task it started on its hosts
    that is accounted on its own (sge_pe(5): a PE with accounting_summary FALSE)."""
    records = []
    for task in sorted(job.tasks, key=lambda t: t.index):
        for attempt in task.attempts:
            if attempt.ended_at is None or never_ran(attempt.started_at, attempt.exit_code, attempt.signal,
                                                     attempt.failure):
                continue
            records.append(Record(job, task, attempt))
            records += [Record(job, task, _as_attempt(attempt, pe_task)) for pe_task in attempt.pe_tasks
                        if not pe_task.in_job_usage and pe_task.ended_at is not None]
    return records


def _as_attempt(attempt: AttemptInfo, pe_task: PeTaskInfo) -> AttemptInfo:
    """A task of a parallel job as a record of its own: its host, times, status and usage."""
    from drover.protocol.api import AttemptInfo

    return AttemptInfo(number=attempt.number, node=pe_task.host, cpu_ids=[], dispatched_at=pe_task.started_at,
                       started_at=pe_task.started_at, ended_at=pe_task.ended_at, exit_code=pe_task.exit_code,
                       signal=pe_task.signal, failure=pe_task.failure, usage=pe_task.usage)


def _selected(records: list[Record], given: dict[str, Given]) -> list[Record]:
    if "t" in given:
        tasks = set(task_indices(given["t"].value or ""))
        records = [r for r in records if r.task.index in tasks]
    if "o" in given and given["o"].value:
        records = [r for r in records if r.job.owner == given["o"].value]
    if "h" in given and given["h"].value:
        records = [r for r in records if fnmatch.fnmatchcase(r.attempt.node, given["h"].value or "")]
    if "q" in given and given["q"].value:
        records = [r for r in records if fnmatch.fnmatchcase(queue_name(r.job), given["q"].value or "")]
    if "slots" in given and given["slots"].value:
        records = [r for r in records if str(r.job.cpus) == given["slots"].value]
    if "d" in given or "b" in given:
        since = time.time() - float(given["d"].value or 0) * 86400 if "d" in given else 0.0
        if "b" in given:
            since = max(since, ge_time(given["b"].value or ""))
        records = [r for r in records if (r.attempt.started_at or r.attempt.dispatched_at) >= since]
    if "e" in given:
        until = ge_time(given["e"].value or "")
        records = [r for r in records if (r.attempt.started_at or r.attempt.dispatched_at) < until]
    return records


def _group(owner: str) -> str:
    import grp
    import pwd

    try:
        return grp.getgrgid(pwd.getpwnam(owner).pw_gid).gr_name
    except KeyError:
        return owner


def _failed(record: Record) -> tuple[int, str]:
    """qacct's `failed` code and its words (get_sstate_description): 0 when the job ran to its end;
    100 when it was ended by a signal (deleted, out of time); 1 when it never started."""
    attempt = record.attempt
    if attempt.started_at is None:
        return 1, "assumedly before job"
    if attempt.signal or attempt.timed_out or attempt.terminated:
        return 100, "assumedly after job"
    return 0, ""


def _memory(kib: float) -> str:
    """A memory value as qacct's double_print_memory_to_dstring() writes it: 1.234M."""
    value, unit = kib * 1024, "B"
    for next_unit in ("K", "M", "G"):
        if value < 1024:
            break
        value, unit = value / 1024, next_unit
    return f"{value:.3f}{unit}"


def showjob(record: Record, group: str) -> str:
    """One record in showjob()'s layout: `%-13.12s` keys, `%-20` values."""
    job, task, attempt = record.job, record.task, record.attempt
    usage = attempt.usage
    user_s, sys_s = (usage.user_cpu_s, usage.sys_cpu_s) if usage else (0.0, 0.0)
    wall = (attempt.ended_at or 0) - (attempt.started_at or attempt.ended_at or 0)
    failed, why = _failed(record)
    signal = attempt.signal or 0
    exit_status = 128 + signal if signal else (attempt.exit_code if attempt.exit_code is not None else
                                                task.exit_status or 0)
    rows: list[tuple[str, str]] = [
        ("qname", f"{queue_name(job):<20}"), ("hostname", f"{attempt.node:<20}"), ("group", f"{group:<20}"),
        ("owner", f"{job.owner:<20}"), ("project", f"{'NONE':<20}"), ("department", f"{'defaultdepartment':<20}"),
        ("jobname", f"{job.name:<20}"), ("jobnumber", f"{job.id:<20}"),
        ("taskid", f"{task.index:<20}" if job.array else "undefined"), ("account", f"{'sge':<20}"),
        ("priority", f"{job.priority:<20}"), ("qsub_time", ctime(job.submitted_at)),
        ("start_time", ctime(attempt.started_at) if attempt.started_at else "-/-"),
        ("end_time", ctime(attempt.ended_at) if attempt.ended_at else "-/-"),
        ("granted_pe", f"{job.pe or ('smp' if job.cpus > 1 else 'NONE'):<20}"), ("slots", f"{job.cpus:<20}"),
        ("failed", f"{failed:<3} {':' if failed else ''} {why}"), ("exit_status", f"{exit_status:<20}"),
        ("ru_wallclock", f"{wall:<13.0f}"), ("ru_utime", f"{user_s:<13.3f}"), ("ru_stime", f"{sys_s:<13.3f}"),
        ("ru_maxrss", f"{usage.max_rss_kib if usage else 0:<20}"), ("ru_ixrss", f"{0:<20}"),
        ("ru_ismrss", f"{0:<20}"), ("ru_idrss", f"{0:<20}"), ("ru_isrss", f"{0:<20}"),
        ("ru_minflt", f"{usage.minor_faults if usage else 0:<20}"),
        ("ru_majflt", f"{usage.major_faults if usage else 0:<20}"), ("ru_nswap", f"{0:<20}"),
        ("ru_inblock", f"{0:<20}"), ("ru_oublock", f"{0:<20}"), ("ru_msgsnd", f"{0:<20}"),
        ("ru_msgrcv", f"{0:<20}"), ("ru_nsignals", f"{0:<20}"),
        ("ru_nvcsw", f"{usage.voluntary_switches if usage else 0:<20}"),
        ("ru_nivcsw", f"{usage.involuntary_switches if usage else 0:<20}"),
        ("cpu", f"{user_s + sys_s:<13.3f}"), ("mem", f"{0:<18.3f}"), ("io", f"{0:<18.3f}"),
        ("iow", f"{0:<18.3f}"), ("maxvmem", _memory(usage.max_rss_kib if usage else 0)), ("arid", "undefined"),
    ]
    return "=" * 62 + "\n" + "".join(f"{key[:12]:<13}{value}\n" for key, value in rows)


# The columns of qacct's summary that name a group, in its order: -h, -q, -o.
_GROUP_COLUMNS = {"h": ("HOST", 30), "q": ("CLUSTER QUEUE", 15), "o": ("OWNER", 12)}


def totals(rows: list[HistoryRow], by: list[str] | None = None) -> str:
    """qacct without -j: the usage summed, as a table; with -h, -q or -o, one line per host,
    queue or owner (or each combination of those given), their names first. MEMORY is the
    integral in GB·s that qacct shows, estimated as peak memory × CPU time; IO is the GB read and
    written where the node recorded them; IOW is not measured (0)."""
    keys = by or []
    title = f"{'WALLCLOCK':>13} {'UTIME':>13} {'STIME':>13} {'CPU':>13} {'MEMORY':>18} {'IO':>18} {'IOW':>18}"

    def line(chosen: list[HistoryRow]) -> str:
        wall = sum(r.wall_s or 0.0 for r in chosen)
        user_s = sum(r.cpu_user_s or 0.0 for r in chosen)
        sys_s = sum(r.cpu_sys_s or 0.0 for r in chosen)
        memory = sum(_peak_gb(r) * ((r.cpu_user_s or 0.0) + (r.cpu_sys_s or 0.0)) for r in chosen)
        io = sum(((r.read_bytes or 0) + (r.write_bytes or 0)) / 1e9 for r in chosen)
        return (f"{wall:13.0f} {user_s:13.3f} {sys_s:13.3f} {user_s + sys_s:13.3f} {memory:18.3f} {io:18.3f} "
                f"{0:18.3f}")

    if not keys:
        return "\n".join(["Total System Usage", title, "=" * len(title), line(rows)]) + "\n"

    def group(row: HistoryRow) -> tuple[str, ...]:
        return tuple({"h": row.node, "q": _queue(row.queue), "o": row.owner}[key] for key in keys)

    head = "".join(f"{_GROUP_COLUMNS[key][0]:<{_GROUP_COLUMNS[key][1]}}" for key in keys) + title
    groups: dict[tuple[str, ...], list[HistoryRow]] = {}
    for row in rows:
        groups.setdefault(group(row), []).append(row)
    body = ["".join(f"{name:<{_GROUP_COLUMNS[key][1]}}" for key, name in zip(keys, names, strict=True))
            + line(groups[names]) for names in sorted(groups)]
    return "\n".join([head, "=" * len(head), *body]) + "\n"


def _peak_gb(row: HistoryRow) -> float:
    peak = max((row.max_rss_kib or 0) * 1024, row.cgroup_peak_bytes or 0)
    return peak / 2**30


if __name__ == "__main__":
    raise SystemExit(main())
