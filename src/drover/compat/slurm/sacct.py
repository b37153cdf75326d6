"""sacct: jobs, running or ended, in Slurm's accounting fields, every option of the real command
parsed as src/sacct/options.c does, and printed as src/common/print_fields.c does: fixed-width
columns (a value too long ends in `+`), or `|`-separated with `-p`/`-P`."""

from __future__ import annotations

import os
import sys
import time

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.slurm.common import (
    VERSION,
    Refused,
    command_line,
    current_user,
    load_jobs,
    reported,
    user_names,
)
from drover.compat.slurm.printfields import Field, Printer, UnknownField, choose
from drover.compat.slurm.sacct_columns import FIELDS, Line, Units
from drover.compat.slurm.sacct_select import Selection, lines_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from drover.client.client import Client

S, A, M, R = Mark.SUPPORTED, Mark.APPROXIMATED, Mark.MEANINGLESS, Mark.REFUSED
NONE, REQ, OPT = Arity.NONE, Arity.REQUIRED, Arity.OPTIONAL
ONE_CLUSTER = "Drover is one cluster"

OPTIONS = [
    Option(("-a", "--allusers"), NONE, S),
    Option(("-A", "--accounts"), REQ, M, "accounts are not kept (sbatch's --account is ignored): every job matches",
           "ACCOUNT_LIST"),
    Option(("-X", "--allocations"), NONE, S, "no `.batch` step lines"),
    Option(("--array",), NONE, S, "one line for each array task, pending ones too"),
    Option(("--autocomplete",), REQ, S, "", "OPTION"),
    Option(("-b", "--brief"), NONE, S, "`JobID,State,ExitCode`"),
    Option(("-B", "--batch-script"), NONE, R, "the script is not kept for accounting"),
    Option(("-c", "--completion"), NONE, R, "as a cluster without job completion logging: "
           "`Slurm job completion is disabled`"),
    Option(("-C", "--constraints"), REQ, M, "Drover has no node features: every job matches", "CONSTRAINT_LIST"),
    Option(("--delimiter",), REQ, S, "", "CHARACTERS"),
    Option(("-D", "--duplicates"), NONE, S, "one line for each attempt; earlier ones are REQUEUED"),
    Option(("--federation",), NONE, M, ONE_CLUSTER),
    Option(("-e", "--helpformat", "--help-fields"), NONE, S),
    Option(("--helpreason",), NONE, S),
    Option(("--helpstate",), NONE, S),
    Option(("-E", "--endtime"), REQ, S, "every form of Slurm's parse_time", "END_TIME"),
    Option(("--env-vars",), NONE, R, "the environment is not kept for accounting"),
    Option(("--expand-patterns",), NONE, S, "paths are always shown expanded"),
    Option(("-f", "--file"), REQ, R, "as a cluster without job completion logging", "FILE"),
    Option(("-F", "--flags"), REQ, M, "the database's flags mean nothing here", "FLAGS"),
    Option(("-g", "--gid", "--group"), REQ, S, "", "GROUP_LIST"),
    Option(("-h", "--help"), NONE, S),
    Option(("--local",), NONE, M, ONE_CLUSTER),
    Option(("--name",), REQ, S, "", "JOBNAME_LIST"),
    Option(("-i", "--nnodes"), REQ, S, "every job has one node", "MIN[-MAX]"),
    Option(("-I", "--ncpus"), REQ, S, "", "MIN[-MAX]"),
    Option(("-j", "--jobs"), REQ, S, "`JOB`, `JOB_INDEX`, `JOB.batch`; repeatable", "JOB[.STEP],..."),
    Option(("-k", "--timelimit-min"), REQ, S, "", "TIME"),
    Option(("-K", "--timelimit-max"), REQ, S, "", "TIME"),
    Option(("-l", "--long"), NONE, S),
    Option(("-L", "--allclusters"), NONE, M, ONE_CLUSTER),
    Option(("-M", "--cluster", "--clusters"), REQ, M, ONE_CLUSTER, "CLUSTER_LIST"),
    Option(("-N", "--nodelist"), REQ, S, "Slurm's hostlist syntax", "NODE_LIST"),
    Option(("--noconvert",), NONE, S),
    Option(("--units",), REQ, S, "K, M, G, T or P", "UNIT"),
    Option(("-n", "--noheader"), NONE, S),
    Option(("-o", "--fields", "--format"), REQ, S, "every field, `FIELD%WIDTH`, repeatable", "FIELD_LIST"),
    Option(("-p", "--parsable"), NONE, S, "`|` after every field"),
    Option(("-P", "--parsable2"), NONE, S, "`|` between fields"),
    Option(("-q", "--qos"), REQ, S, "every job's QOS is `normal`", "QOS_LIST"),
    Option(("-r", "--partition"), REQ, S, "a Drover queue", "PART_LIST"),
    Option(("-R", "--reason"), REQ, S, "", "REASON_LIST"),
    Option(("-s", "--state"), REQ, S, "names or codes; the window rules of Slurm", "STATE_LIST"),
    Option(("-S", "--starttime"), REQ, S, "every form of Slurm's parse_time", "START_TIME"),
    Option(("-T", "--truncate"), NONE, S, "start and end times cut to the window"),
    Option(("-t",), NONE, S, "as `-X` (an old spelling)"),
    Option(("-u", "--uid", "--user"), REQ, S, "names or ids; `-1` is everyone", "USER_LIST"),
    Option(("--use-local-uid",), NONE, M, "users are local already"),
    Option(("-U", "--usage"), NONE, S),
    Option(("-v", "--verbose"), NONE, M, "nothing more to say"),
    Option(("-V", "--version"), NONE, S),
    Option(("-W", "--wckeys"), REQ, M, "Drover has no WCKeys: every job matches", "WCKEY_LIST"),
    Option(("--whole-hetjob",), OPT, M, "Drover has no heterogeneous jobs", "[yes|no]"),
    Option(("-x", "--associations"), REQ, M, "Drover has no associations: every job matches", "ASSOC_LIST"),
    Option(("--json",), OPT, R, "the data_parser output is not produced", "[DATA_PARSER]"),
    Option(("--yaml",), OPT, R, "the data_parser output is not produced", "[DATA_PARSER]"),
]
BRIEF = "jobid,state,exitcode"
DEFAULT = "jobid,jobname,partition,account,alloccpus,state,exitcode"
LONG = ("jobid,jobidraw,jobname,partition,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss,maxrssnode,"
        "maxrsstask,averss,maxpages,maxpagesnode,maxpagestask,avepages,mincpu,mincpunode,mincputask,avecpu,ntasks,"
        "alloccpus,elapsed,state,exitcode,avecpufreq,reqcpufreqmin,reqcpufreqmax,reqcpufreqgov,reqmem,"
        "consumedenergy,maxdiskread,maxdiskreadnode,maxdiskreadtask,avediskread,maxdiskwrite,maxdiskwritenode,"
        "maxdiskwritetask,avediskwrite,reqtres,alloctres,tresusageinave,tresusageinmax,tresusageinmaxn,"
        "tresusageinmaxt,tresusageinmin,tresusageinminn,tresusageinmint,tresusageintot,tresusageoutmax,"
        "tresusageoutmaxn,tresusageoutmaxt,tresusageoutave,tresusageouttot")


def choose_fields(text: str) -> list[Field[Line]]:
    """A --format list: sacct's names, abbreviated, with `%WIDTH`; the removed GRES fields are
    refused in sacct's words."""
    for word in text.split(","):
        name = word.partition("%")[0].strip().lower()
        if name in ("allocgres", "reqgres"):
            raise Refused(f"{word.strip().partition('%')[0]} has been removed, please use {name[:-4].capitalize()}TRES")
    try:
        return choose(text, FIELDS, allow_all=True)
    except UnknownField as error:
        raise Refused(str(error)) from None


def _informational(found: list[tuple[Option, str | None]]) -> int | None:
    for option, _value in found:
        key = option.key
        if key == "version":
            print(VERSION)
            return 0
        if key in ("help", "usage"):
            print("Usage: sacct [options]\n\tUse --help-fields for the fields, --helpstate for the states.")
            return 0
        if key == "helpformat":
            names = [field.name for field in FIELDS]
            for i in range(0, len(names), 4):
                print("".join(f"{name:<20}" for name in names[i:i + 4]).rstrip())
            return 0
        if key == "helpstate":
            from drover.compat.slurm.jobs import COMPACT

            for name, code in COMPACT.items():
                print(f"{code:<4}{name}")
            return 0
        if key == "helpreason":
            from drover.compat.slurm.jobs import END_REASONS, PENDING_REASONS

            print("\n".join(dict.fromkeys(["None", "JobHeldUser", *PENDING_REASONS.values(), *END_REASONS.values()])))
            return 0
    return None


def main(argv: list[str] | None = None) -> int:
    parsed = command_line("sacct", argv, OPTIONS, hint=False)
    if isinstance(parsed, int):
        return parsed
    found, operands = parsed
    early = _informational(found)
    if early is not None:
        return early
    return reported("sacct", lambda: _run(found, operands, dict(os.environ)))


def _run(found: list[tuple[Option, str | None]], operands: list[str], environ: dict[str, str]) -> int:
    if operands:
        raise Refused("Unknown arguments: " + " ".join(operands))
    keys = [option.key for option, _ in found]
    for option, _ in found:
        if option.key in ("completion", "file"):
            print("Slurm job completion is disabled", file=sys.stderr)
            return 1
        if option.mark is Mark.REFUSED:
            raise Refused(f"{option.names[-1]} is not supported by Drover: {option.note}")
    values: dict[str, list[str]] = {}
    for option, value in found:
        values.setdefault(option.key, []).append(value or "")
    if "long" in keys and "fields" in keys:
        raise Refused("Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry.")
    field_text = ",".join(values.get("fields", []))
    if "brief" in keys:
        field_text += "," + BRIEF
    if "long" in keys:
        field_text += "," + LONG
    if not field_text.strip(","):
        field_text = environ.get("SACCT_FORMAT") or DEFAULT
    fields = choose_fields(field_text)
    now = time.time()
    selection = Selection.from_options(values, keys, now, _users(values, keys))
    from drover.client.client import Client

    with Client() as client:
        ids = sorted({ref.job_id for ref in selection.refs}) if selection.refs else None
        if ids is None and ran_states(selection):
            ids = _candidates(client, selection)
        infos = load_jobs(client, ids, include_ended=True, keep=selection.may_want)
    units = Units(keep="noconvert" in keys, target=values["units"][-1] if "units" in values else None)
    rows = [row for info in infos for row in lines_of(info, selection, now, units)]
    parsable = "ending" if "parsable" in keys else None
    parsable = "between" if "parsable2" in keys else parsable
    delimiter = values["delimiter"][-1] if "delimiter" in values else None
    printer: Printer[Line] = Printer(fields, parsable, delimiter, header="noheader" not in keys)
    text = printer.lines(rows)
    if text:
        print("\n".join(text))
    return 0


# Final states only a job that ran can end in (a job cancelled while it waited has no attempt,
# so CANCELLED is not one): Slurm's name → Drover's.
RAN_STATES = {"COMPLETED": "completed", "FAILED": "failed", "TIMEOUT": "timeout", "OUT_OF_MEMORY": "out_of_memory",
              "NODE_FAIL": "node_fail"}


def ran_states(selection: Selection) -> list[str]:
    """Drover's names of the states -s asks for, when each is one only an ended attempt has
    (then the controller finds the jobs in its accounting records); else none."""
    if not selection.states or not selection.states <= RAN_STATES.keys():
        return []
    return sorted(RAN_STATES[state] for state in selection.states)


def _candidates(client: Client, selection: Selection) -> list[int]:
    """The jobs that may have a line when -s asks for final states only: the live ones (their
    state may be final by the time they are read), and those whose attempts ended in the window
    in those states, as the controller selects them from its accounting records (by end time,
    state, and the user or partition when only one is asked for)."""
    filters: dict[str, Any] = {"since": selection.start, "state": ",".join(ran_states(selection))}
    if selection.end:
        filters["until"] = selection.end + 1  # the window's end is inclusive, to the second
    if selection.users is not None and len(selection.users) == 1:
        filters["user"] = next(iter(selection.users))
    if selection.partitions is not None and len(selection.partitions) == 1:
        filters["queue"] = selection.partitions[0]
    ended = {row.job_id for row in client.history(limit=10_000_000, **filters)}
    live = {job.id for job in client.jobs(include_ended=False, limit=100000)}
    return sorted(ended | live)


def _users(values: dict[str, list[str]], keys: list[str]) -> set[str] | None:
    """Whose jobs: -u's users; everyone with -a, with -j or -N, or for root; else the caller."""
    if "uid" in values:
        text = values["uid"][-1]
        return None if text == "-1" else user_names(text)
    if "allusers" in keys or "jobs" in keys or "nodelist" in keys or os.getuid() == 0:
        return None
    return {current_user()}

if __name__ == "__main__":
    raise SystemExit(main())
