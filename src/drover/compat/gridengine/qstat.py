"""qstat: the jobs that have not ended, in Grid Engine's table (default: your own; `-u '*'`
everyone's), `-f` under their queue instances, `-xml`, `-s` by state, `-g d` a line per task;
`qstat -j LIST` the jobs in detail."""

from __future__ import annotations

import sys

from drover.compat.gridengine import qstat_detail, qstat_view
from drover.compat.gridengine.common import (
    approximator,
    arch,
    failed,
    is_strict,
    queue_name,
    user_name,
)
from drover.compat.gridengine.jobaction import usage
from drover.compat.gridengine.syntax import GeUsageError, Given, Operands, parse
from drover.compat.gridengine.values import job_refs
from drover.compat.optiontable import Arity, Mark, Option
from drover.core.errors import DroverError, NotFound

N, R, OPT = Arity.NONE, Arity.REQUIRED, Arity.OPTIONAL
OK, APPROX, MEANINGLESS = Mark.SUPPORTED, Mark.APPROXIMATED, Mark.MEANINGLESS
OPTIONS = [
    Option(("-explain",), R, MEANINGLESS, "queue alarms and errors: Drover's queues have none to explain",
           "a|A|c|E"),
    Option(("-ext",), N, APPROX, "the plain table, with a warning (no tickets, projects or usage columns)"),
    Option(("-f",), N, OK, "each queue instance (queue@node) with its jobs, then the waiting jobs"),
    Option(("-F",), Arity.OPTIONAL, APPROX, "as `-f`; no resource values, with a warning", "[resource_name,...]"),
    Option(("-g",), R, OK, "`c`: the cluster queue summary; `d`: a line per array task; `t` ≈ the plain table, "
           "with a warning", "{c|d|t}[+]"),
    Option(("-help",), N, OK, "prints the usage"),
    Option(("-j",), OPT, OK, "the jobs in detail; none exists: `Following jobs do not exist`, exit 1",
           "[job_list]"),
    Option(("-l",), R, APPROX, "not a filter on Drover: every job is listed, with a warning", "resource[=value],..."),
    Option(("-ne",), N, MEANINGLESS, "with `-f`: empty queue instances are shown all the same"),
    Option(("-ncb",), N, MEANINGLESS, "no core binding is shown"),
    Option(("-pe",), R, APPROX, "not a filter on Drover: every job is listed, with a warning", "pe_name,..."),
    Option(("-pri",), N, APPROX, "the plain table, with a warning (no priority columns)"),
    Option(("-q",), R, OK, "only jobs of these queues (`all.q` is Drover's default queue)", "wc_queue_list"),
    Option(("-qs",), R, MEANINGLESS, "not a filter on Drover: `-f` shows each instance's states (`u`, `d`, "
           "and `E`: the node, or the queue on it, in error)",
           "{a|c|d|o|s|u|A|C|D|E|S}"),
    Option(("-r",), N, OK, "each job's full name, queue and requests under it"),
    Option(("-s",), R, OK, "`p` waiting, `r` running, `s` suspended, `h`/`hu`/`hj` held, `a` all; `z` lists "
           "nothing (ended jobs: `qacct`)", "{p|r|s|z|hu|ho|hs|hd|hj|ha|h|a}[+]"),
    Option(("-t",), N, APPROX, "the plain table, with a warning (no parallel task columns)"),
    Option(("-U",), R, MEANINGLESS, "queue access lists: every queue takes every user", "user,..."),
    Option(("-u",), R, OK, "these users' jobs; `*`: everyone's (the default is your own)", "user,..."),
    Option(("-urg",), N, APPROX, "the plain table, with a warning (no urgency columns)"),
    Option(("-xml",), N, OK, "the `job_info` document (`-j`: `detailed_job_info`)"),
]
PENDING, HELD = ("qw", "hqw", "Eqw"), ("hqw", "Eqw")

TYPE_CHECKING = False
if TYPE_CHECKING:
    from drover.client.client import Client
    from drover.protocol.api import JobInfo


def main(argv: list[str] | None = None) -> int:
    try:
        parsed = parse(list(sys.argv[1:] if argv is None else argv), OPTIONS, Operands.NONE)
    except GeUsageError as error:
        print(error, file=sys.stderr)  # the error first, then the usage
        print(usage("qstat", OPTIONS, ""), file=sys.stderr)
        return 1
    given = {g.key: g for g in parsed.given}
    if "help" in given:
        print(usage("qstat", OPTIONS, ""))
        return 0
    if "s" in given and not _is_state_selection((given["s"].value or "").rstrip("+")):
        print("ERROR! wrong argument to -s option", file=sys.stderr)
        print(usage("qstat", OPTIONS, ""), file=sys.stderr)
        return 1
    try:
        return _main(parsed.given, given)
    except DroverError as error:
        return failed("qstat", error)


def _main(all_given: list[Given], given: dict[str, Given]) -> int:
    approximate = approximator("qstat", is_strict())
    for key in ("ext", "pri", "urg", "t", "l", "pe"):
        if key in given:
            approximate(f"-{key}: not shown by Drover; the plain listing follows")
    from drover.client.client import Client

    with Client() as client:
        if "j" in given:
            return _detail(client, given["j"].value, "xml" in given)
        if "g" in given and "c" in (given["g"].value or ""):
            return _summary(client, given)
        users = [u for g in all_given if g.key == "u" and g.value for u in g.value.split(",")] or [user_name()]
        jobs = _jobs(client, users)
        each_task = "g" in given and "d" in (given["g"].value or "")
        if "g" in given and not each_task:
            approximate(f"-g {given['g'].value}: the plain listing follows")
        rows = [row for job in jobs for row in qstat_view.rows(job, each_task)]
        rows = _select(rows, given)
        if "q" in given:
            wanted = {q.split("@")[0] for q in (given["q"].value or "").split(",")}
            rows = [r for r in rows if queue_name(_job(jobs, r.job_id)) in wanted]
        full = "f" in given or "F" in given
        if "F" in given:
            approximate("-F: resource values are not shown")
        machine = arch()
        if "xml" in given:
            if full:
                print(qstat_view.xml(rows, client.nodes(), _queues(jobs), machine), end="")
            else:
                print(qstat_view.xml(rows), end="")
        elif full:
            print(qstat_view.full(rows, client.nodes(), _queues(jobs), machine), end="")
        else:
            text = qstat_view.table(rows)
            if "r" in given and text:
                text = _with_requests(text, rows, jobs)
            print(text, end="")
    return 0


def _summary(client: Client, given: dict[str, Given]) -> int:
    """-g c: a line per cluster queue (-q: those named or matched)."""
    from fnmatch import fnmatchcase

    from drover.compat.gridengine.queues import cluster_summary, ge_name

    queues = client.queues()
    if "q" in given:
        patterns = [q.split("@")[0] for q in (given["q"].value or "").split(",") if q]
        queues = [q for q in queues if any(fnmatchcase(ge_name(q.name), p) for p in patterns)]
    print(cluster_summary(queues, client.nodes()), end="")
    return 0


def _jobs(client: Client, users: list[str]) -> list[JobInfo]:
    listed = client.jobs() if "*" in users else [job for user in users for job in client.jobs(user=user)]
    jobs = []
    for job in listed:
        try:
            jobs.append(client.job(job.id))
        except NotFound:
            continue  # ended and gone between the two calls
    return jobs


def _job(jobs: list[JobInfo], job_id: int) -> JobInfo:
    return next(job for job in jobs if job.id == job_id)


STATE_FLAGS = ("hu", "hs", "ho", "hd", "hj", "ha", "h", "p", "r", "s", "z", "a")  # qstat(1) -s


def _is_state_selection(spec: str) -> bool:
    """Whether -s is made of qstat's flags only (its parser matches them in this order)."""
    rest = spec
    while rest:
        flag = next((flag for flag in STATE_FLAGS if rest.startswith(flag)), None)
        if flag is None:
            return False
        rest = rest[len(flag):]
    return bool(spec)


def _select(rows: list[qstat_view.Row], given: dict[str, Given]) -> list[qstat_view.Row]:
    """-s: p waiting (with held), r running (and in transfer), s suspended, h… held, a all."""
    if "s" not in given:
        return rows
    spec = (given["s"].value or "").rstrip("+")
    wanted: set[str] = set()
    letters = spec.replace("hu", "H").replace("hj", "H").replace("ho", "").replace("hs", "").replace("hd", "")
    letters = letters.replace("ha", "H").replace("h", "H")
    for letter in letters:
        wanted |= {"p": set(PENDING), "r": {"r", "t"}, "s": {"s", "S", "sS"}, "H": set(HELD), "a": {
            *PENDING, "r", "t", "s", "S", "sS"}, "z": set()}.get(letter, set())
    return [row for row in rows if row.state in wanted]


def _queues(jobs: list[JobInfo]) -> list[str]:
    return sorted({"all.q", *(queue_name(job) for job in jobs)})


def _with_requests(text: str, rows: list[qstat_view.Row], jobs: list[JobInfo]) -> str:
    """-r: under each job's line, its full name, master queue and hard requests."""
    lines = text.splitlines()
    out = lines[:2]
    for line, row in zip(lines[2:], sorted(rows, key=lambda r: not r.is_running), strict=False):
        out.append(line)
        job = _job(jobs, row.job_id)
        out.append(f"       Full jobname:     {job.name}")
        if row.queue:
            out.append(f"       Master Queue:     {row.queue}")
        resources = qstat_detail.fields(job, None, None, None)
        hard = dict(resources).get("hard resource_list", "")
        out.append(f"       Hard Resources:   {hard.replace(',', ' ')}")
        if job.cpus > 1 or job.pe:
            out.append(f"       Requested PE:     {job.pe or 'smp'} {job.cpus}")
            if row.queue:
                out.append(f"       Granted PE:       {job.pe or 'smp'} {job.cpus}")
    return "\n".join(out) + "\n"


def _detail(client: Client, job_list: str | None, as_xml: bool) -> int:
    """-j: each job in detail. Only when none of them exists does qstat complain and exit 1."""
    refs = [ref for ref, _tasks in job_refs([job_list])] if job_list else []
    jobs: list[JobInfo] = []
    if not refs:
        jobs = [client.job(job.id) for job in client.jobs(user=user_name())]
    for ref in refs:
        if (ref.isascii() and ref.isdigit()):
            try:
                job = client.job(int(ref))
            except NotFound:
                continue
            if job.ended_at is None:
                jobs.append(job)
        else:
            import fnmatch

            jobs += [client.job(j.id) for j in client.jobs() if fnmatch.fnmatchcase(j.name, ref)]
    if refs and not jobs:
        if as_xml:
            print(qstat_detail.xml_not_found(refs), end="")
            return 0
        print(qstat_detail.not_found(refs), end="", file=sys.stderr)
        return 1
    for job in jobs if not as_xml else []:
        print(qstat_detail.text(job, *_ids(job.owner)), end="")
    if as_xml:
        print(qstat_detail.xml(jobs, *_ids(user_name())), end="")
    return 0


def _ids(user: str) -> tuple[int | None, int | None, str | None]:
    """The user's uid, gid and group name, where this machine knows the user."""
    import grp
    import pwd

    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return None, None, None
    try:
        group: str | None = grp.getgrgid(entry.pw_gid).gr_name
    except KeyError:
        group = None
    return entry.pw_uid, entry.pw_gid, group


if __name__ == "__main__":
    raise SystemExit(main())
