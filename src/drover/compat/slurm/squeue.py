"""squeue: pending and running jobs in Slurm's columns, every option of the real command parsed
as its getopt_long does (src/squeue/opts.c), its SQUEUE_* variables read, every `-o` letter and
`-O` name printed (squeue_columns.py)."""

from __future__ import annotations

import os
import sys
import time

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.slurm import columns as fmt
from drover.compat.slurm.common import (
    CONNECT_FAILURE,
    VERSION,
    Refused,
    approximated,
    command_line,
    current_user,
    environment_defaults,
    iterate_seconds,
    load_jobs,
    recent,
    split_list,
    user_names,
)
from drover.compat.slurm.hostlist import expand
from drover.compat.slurm.jobs import COMPACT, FINAL, SlurmJob, slurm_jobs
from drover.compat.slurm.squeue_columns import COLUMNS
from drover.compat.slurm.squeue_sort import sort_jobs
from drover.core.errors import BadRequest, DroverError, Unreachable

S, A, M, R = Mark.SUPPORTED, Mark.APPROXIMATED, Mark.MEANINGLESS, Mark.REFUSED
NONE, REQ, OPT = Arity.NONE, Arity.REQUIRED, Arity.OPTIONAL
ONE_CLUSTER = "Drover is one cluster"

OPTIONS = [
    Option(("-A", "--accounts"), REQ, M, "accounts are not kept (sbatch's --account is ignored): every job matches",
           "ACCOUNT_LIST"),
    Option(("-a", "--all"), NONE, M, "no partition is hidden"),
    Option(("-r", "--array"), NONE, S, "one line for each array task, pending ones too"),
    Option(("--autocomplete",), REQ, S, "", "OPTION"),
    Option(("--expand-patterns",), NONE, S, "paths are always shown expanded"),
    Option(("--federation",), NONE, M, ONE_CLUSTER),
    Option(("-O", "--Format"), REQ, S, "every name, `:[.]WIDTH[SUFFIX]`", "NAME[:[.]SIZE],..."),
    Option(("-o", "--format"), REQ, S, "every letter, `%[.][SIZE]LETTER`", "FORMAT"),
    Option(("--help",), NONE, S),
    Option(("--helpstate",), NONE, S),
    Option(("--helpformat",), NONE, S),
    Option(("--helpFormat",), NONE, S),
    Option(("--hide",), NONE, M, "no partition is hidden"),
    Option(("-i", "--iterate"), REQ, S, "prints the time, then the table, every SECONDS", "SECONDS"),
    Option(("-j", "--jobs"), OPT, S, "`JOB`, `JOB_INDEX`; an unknown single job is an error, as in Slurm",
           "[JOB_LIST]"),
    Option(("--local",), NONE, M, ONE_CLUSTER),
    Option(("-l", "--long"), NONE, S),
    Option(("-L", "--licenses"), REQ, S, "no job holds licenses, so none matches", "LICENSE_LIST"),
    Option(("-M", "--cluster", "--clusters"), REQ, M, ONE_CLUSTER, "CLUSTER_NAME"),
    Option(("--me",), NONE, S),
    Option(("-n", "--name"), REQ, S, "", "NAME_LIST"),
    Option(("--noconvert",), NONE, M, "sizes are printed as Slurm converts them"),
    Option(("-w", "--nodelist", "--node", "--nodes"), REQ, S, "Slurm's hostlist syntax", "HOSTLIST"),
    Option(("-h", "--noheader"), NONE, S),
    Option(("--notme",), NONE, S),
    Option(("--only-job-state",), NONE, S),
    Option(("-p", "--partitions"), REQ, S, "a Drover queue", "PART_LIST"),
    Option(("-P", "--priority"), NONE, M, "a job is in one queue, so one line each"),
    Option(("-q", "--qos"), REQ, S, "every job's QOS is `normal`", "QOS_LIST"),
    Option(("-R", "--reservation"), REQ, S, "Drover has no reservations, so no job matches", "NAME"),
    Option(("--running-over",), REQ, S, "", "TIME"),
    Option(("--running-under",), REQ, S, "", "TIME"),
    Option(("--sibling", "--sib"), NONE, M, ONE_CLUSTER),
    Option(("-S", "--sort"), REQ, S, "letters of `-o`, `-` for descending", "SORT_LIST"),
    Option(("--start",), NONE, A, "Drover does not estimate start times: they show as N/A"),
    Option(("-s", "--steps"), OPT, R, "job steps are not recorded", "[STEP_LIST]"),
    Option(("-t", "--states"), REQ, S, "names or codes, `all`", "STATE_LIST"),
    Option(("--usage",), NONE, S),
    Option(("-u", "--user", "--users"), REQ, S, "names or ids", "USER_LIST"),
    Option(("-v", "--verbose"), NONE, M, "nothing more to say"),
    Option(("-V", "--version"), NONE, S),
    Option(("--json",), OPT, R, "the data_parser output is not produced", "[DATA_PARSER]"),
    Option(("--yaml",), OPT, R, "the data_parser output is not produced", "[DATA_PARSER]"),
    Option(("-U",), REQ, M, "as `-A` (an old spelling)", "ACCOUNT_LIST"),
]
# Input environment variables → the option they stand for (the command line wins).
ENVIRONMENT = {
    "SQUEUE_ACCOUNT": "accounts", "SQUEUE_ALL": "all", "SQUEUE_ARRAY": "array", "SQUEUE_FEDERATION": "federation",
    "SQUEUE_LICENSES": "licenses", "SQUEUE_LOCAL": "local", "SQUEUE_NAMES": "name", "SQUEUE_PARTITION": "partitions",
    "SQUEUE_PRIORITY": "priority", "SQUEUE_QOS": "qos", "SQUEUE_SIB": "sibling", "SQUEUE_SIBLING": "sibling",
    "SQUEUE_SORT": "sort",
    "SQUEUE_STATES": "states", "SQUEUE_USERS": "user",
}
DEFAULT_FORMAT = "jobarrayid:.18 ,partition:.9 ,name:.8 ,username:.8 ,statecompact:.2 ,timeused:.10 ,numnodes:.6 ,reasonlist:0"
LONG_FORMAT = ("jobarrayid:.18 ,partition:.9 ,name:.8 ,username:.8 ,state:.8 ,timeused:.10 ,timelimit:.9 ,"
               "numnodes:.6 ,reasonlist:0")
START_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R"
STATE_NAMES = {**{name: name for name in COMPACT}, **{code: name for name, code in COMPACT.items()}}
LETTERS = fmt.by_letter(COLUMNS)
NAMES = fmt.by_name(COLUMNS)


class Query:
    """What the command line asks for, read from the parsed options."""

    def __init__(self, found: list[tuple[Option, str | None]], operands: list[str], environ: dict[str, str]) -> None:
        self.values: dict[str, str | None] = {}
        self.flags: set[str] = set()
        for option, value in found:
            if option.arity is Arity.NONE:
                self.flags.add(option.key)
            else:
                self.values[option.key] = value
                if option.arity is Arity.OPTIONAL:
                    self.flags.add(option.key)
        if "format" in self.values and "Format" in self.values:
            raise Refused("-O (--Format) is incompatible with -o (--format)")
        if "long" in self.flags and "format" in self.values:
            raise Refused("Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry.")
        if "jobs" in self.flags and operands and self.values.get("jobs") is None:
            self.values["jobs"] = operands.pop(0)  # `squeue -j 12`: getopt leaves 12 an operand
        if operands:
            raise Refused(f"Unrecognized option: {operands[0]}")
        overridden = {"format", "Format", "long", "start"} & (set(self.values) | self.flags)
        if not overridden and environ.get("SQUEUE_FORMAT"):
            self.values["format"] = environ["SQUEUE_FORMAT"]
        elif not overridden and environ.get("SQUEUE_FORMAT2"):
            self.values["Format"] = environ["SQUEUE_FORMAT2"]
        jobs, states = self.values.get("jobs"), self.values.get("states")
        self.job_refs = _job_list(jobs) if jobs else None
        self.states = _state_list(states) if states else None
        self.users = user_names(self.values["user"] or "", _invalid_user) if self.values.get("user") else None
        if "me" in self.flags:
            self.users = {current_user()}
        self.nodes = set(expand(self.values["nodelist"] or "")) if self.values.get("nodelist") else None
        if "start" in self.flags and self.states is None:
            self.states = {"PENDING"}

    def specs(self, errors: list[str]) -> list[fmt.Spec[SlurmJob]]:
        chosen = self.values.get("format")
        if chosen and chosen.lower() == "%all":
            # every letter a..z then A..Z, `|` between them; letters squeue lacks are left out
            letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [chr(c) for c in range(ord("A"), ord("Z") + 1)]
            everything = "|".join(f"%{letter}" for letter in letters if letter in LETTERS)
            return fmt.parse_letters(everything, LETTERS, errors)
        if chosen:
            return fmt.parse_letters(chosen, LETTERS, errors)
        if "start" in self.flags:
            return fmt.parse_letters(START_FORMAT, LETTERS, errors)
        chosen = self.values.get("Format") or (LONG_FORMAT if "long" in self.flags else DEFAULT_FORMAT)
        return fmt.parse_names(chosen, NAMES, errors)

    def wants(self, job: SlurmJob) -> bool:
        if self.job_refs is not None and not any(
                job.job_id == job_id and (index is None or index == job.index or _in_group(job, index))
                for job_id, index in self.job_refs):
            return False
        if self.states is None:
            if job.state not in ("PENDING", "RUNNING", "SUSPENDED", "COMPLETING"):
                return False
        elif "ALL" not in self.states and job.state not in self.states:
            return False
        if self.users is not None and job.user not in self.users:
            return False
        if "notme" in self.flags and job.user == current_user():
            return False
        if self.values.get("name") and job.info.name not in split_list(self.values["name"] or ""):
            return False
        if self.values.get("partitions") and job.info.queue not in split_list(self.values["partitions"] or ""):
            return False
        if self.values.get("qos") and "normal" not in {q.lower() for q in split_list(self.values["qos"] or "")}:
            return False
        if self.values.get("licenses") or self.values.get("reservation"):
            return False
        if self.nodes is not None and not self.nodes & set(job.nodes):
            return False
        return self._running_window(job)

    def _running_window(self, job: SlurmJob) -> bool:
        from drover.core.units import parse_duration_s

        over, under = self.values.get("running-over"), self.values.get("running-under")
        if over and job.elapsed <= parse_duration_s(over):
            return False
        return not (under and job.elapsed >= parse_duration_s(under))


def _invalid_user(name: str) -> None:
    """squeue reports a user it does not know and lists the others' jobs (none, if no other)."""
    print(f"squeue: error: Invalid user: {name}", file=sys.stderr)


def _in_group(job: SlurmJob, index: int) -> bool:
    """A pending group `12_[1-5]` is shown for `-j 12_3` as squeue shows a partial array."""
    if job.pending_indices is None:
        return False
    for part in job.pending_indices.split(","):
        first, _, last = part.partition("-")
        if int(first) <= index <= int(last or first):
            return True
    return False


def _job_list(text: str) -> list[tuple[int, int | None]]:
    refs: list[tuple[int, int | None]] = []
    for word in split_list(text):
        job, _, index = word.partition("_")
        if not (job.isascii() and job.isdigit()) or (index and not (index.isascii() and index.isdigit())) or int(job) == 0:
            raise Refused(f"Invalid job id: {word}")
        refs.append((int(job), int(index) if index else None))
    return refs


def _state_list(text: str) -> set[str]:
    states: set[str] = set()
    for word in split_list(text):
        upper = word.upper()
        if upper == "ALL":
            states.add("ALL")
        elif upper in STATE_NAMES:
            states.add(STATE_NAMES[upper])
        else:
            valid = ",".join(name.lower() for name in COMPACT)
            raise Refused(f"Invalid job state specified: {word}\nsqueue: error: Valid job states include: {valid}\n")
    return states


def render(query: Query, jobs: list[SlurmJob], out: list[str], errors: list[str]) -> None:
    specs = query.specs(errors)
    if "noheader" not in query.flags:
        out.append(fmt.header(specs))
    chosen = [job for job in jobs if query.wants(job)]
    for job in sort_jobs(chosen, query.values.get("sort"), LETTERS):
        out.append(fmt.line(specs, job))


def collect(query: Query, now: float) -> list[SlurmJob]:
    """The jobs from the cluster, as Slurm's lines. Raises Refused for a single job id Slurm
    would not know: never submitted, or ended longer ago than MinJobAge."""
    from drover.client.client import Client

    ids = sorted({job_id for job_id, _ in query.job_refs}) if query.job_refs else None
    final_asked = query.states is not None and ("ALL" in query.states or bool(query.states & FINAL))
    with Client() as client:
        infos = load_jobs(client, ids, include_ended=final_asked)
        if any(info.ended_at is not None for info in infos):
            infos = recent(infos, now, client.ping().min_job_age_s)
    if ids is not None and len(ids) == 1 and not infos:
        raise Refused("slurm_load_jobs error: Invalid job id specified")
    split = "array" in query.flags
    return [line for info in infos for line in slurm_jobs(info, now, split_pending=split)]


def main(argv: list[str] | None = None) -> int:
    environ = dict(os.environ)
    parsed = command_line("squeue", argv, OPTIONS)
    if isinstance(parsed, int):
        return parsed
    found, operands = parsed
    found = environment_defaults(OPTIONS, ENVIRONMENT, environ) + found
    early = _informational(found)
    if early is not None:
        return early
    try:
        query = Query(found, operands, environ)
        refused = [option for option, _ in found if option.mark is Mark.REFUSED]
        if refused:
            raise Refused(f"{refused[0].names[-1]} is not supported by Drover: {refused[0].note}")
        for option, _ in found:
            if option.mark is Mark.APPROXIMATED:
                approximated("squeue", option, environ)
        iterate = iterate_seconds(query.values.get("iterate"))
        if query.values.get("iterate") is not None and iterate <= 0:
            raise Refused(f"--iterate={query.values['iterate']}")
        while True:
            if iterate:
                print(time.strftime("%a %b %d %H:%M:%S %Y"))
            now = time.time()
            out: list[str] = []
            errors: list[str] = []
            render(query, collect(query, now), out, errors)
            for message in errors:
                print(f"squeue: error: {message}", file=sys.stderr)
            if out:
                print("\n".join(out))
            if not iterate:
                return 0
            print()
            sys.stdout.flush()
            time.sleep(iterate)
    except Refused as error:
        message = str(error)
        print(message if message.startswith("slurm_load_jobs") else f"squeue: error: {message}",
              file=sys.stderr, end="" if message.endswith("\n") else "\n")
        return 1
    except (BadRequest, ValueError) as error:
        print(f"squeue: error: {error}", file=sys.stderr)
        return 1
    except Unreachable:
        print(f"slurm_load_jobs error: {CONNECT_FAILURE}", file=sys.stderr)
        return 1
    except DroverError as error:
        print(f"squeue: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _informational(found: list[tuple[Option, str | None]]) -> int | None:
    """--help, --usage, --version, --helpformat, --helpFormat, --helpstate: print and exit 0."""
    for option, _value in found:
        if option.key == "version":
            print(VERSION)
            return 0
        if option.key in ("help", "usage"):
            names = " ".join(f"[{', '.join(o.names)}{'=' + o.metavar if o.metavar else ''}]" for o in OPTIONS)
            print(f"Usage: squeue {names}")
            return 0
        if option.key == "helpformat":
            letters = sorted(LETTERS.items(), key=lambda item: (item[0].lower(), item[0].isupper()))
            print(" ".join(f"%{letter:<2}" for letter, _ in letters))
            return 0
        if option.key == "helpFormat":
            print(" ".join(column.name for column in COLUMNS))
            return 0
        if option.key == "helpstate":
            print("\n".join(name.lower() for name in COMPACT))
            return 0
    return None


if __name__ == "__main__":
    raise SystemExit(main())
