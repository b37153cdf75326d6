"""scancel: cancel jobs or array tasks (`12`, `12_3`, `12_[1-5]`), or send them a signal; the
jobs named, or those that match every filter given (user, name, partition, state, nodes). Options
as src/scancel/opt.c reads them, SCANCEL_* variables included.

Refusals are Slurm's: "Kill job error on job id 12: Invalid job id specified" for a job the
cluster does not know, "...: Job/step already completing or completed" for one that ended,
"...: Access/permission denied" for another user's, exit status 1; with -Q none is printed,
and a job that is gone is not an error."""

from __future__ import annotations

import os
import sys
import time

from drover.compat.optiontable import Arity, Mark, Option
from drover.compat.slurm.actions import act, slurm_ref
from drover.compat.slurm.common import (
    VERSION,
    Refused,
    approximated,
    command_line,
    current_user,
    environment_defaults,
    reported,
    split_list,
    user_names,
)
from drover.compat.slurm.hostlist import expand
from drover.compat.slurm.jobs import slurm_jobs
from drover.core.errors import BadRequest
from drover.core.signals import job_signal

S, A, M, R = Mark.SUPPORTED, Mark.APPROXIMATED, Mark.MEANINGLESS, Mark.REFUSED
NONE, REQ = Arity.NONE, Arity.REQUIRED

OPTIONS = [
    Option(("-A", "--account"), REQ, M, "accounts are not kept: every job matches", "ACCOUNT"),
    Option(("--admin-comment",), REQ, M, "not kept", "COMMENT"),
    Option(("--autocomplete",), REQ, S, "", "OPTION"),
    Option(("-b", "--batch"), NONE, A, "the signal goes to all of the job's processes, the batch shell among them"),
    Option(("--ctld",), NONE, M, "requests always go through the controller"),
    Option(("-c", "--cron"), NONE, M, "Drover has no cron jobs"),
    Option(("-f", "--full"), NONE, S, "the batch shell and every process of the job"),
    Option(("--help",), NONE, S),
    Option(("-H", "--hurry"), NONE, M, "Drover has no burst buffers to stage out"),
    Option(("-i", "--interactive"), NONE, R, "asking for each job needs a terminal; scancel never asks"),
    Option(("-M", "--cluster", "--clusters"), REQ, M, "Drover is one cluster", "CLUSTER"),
    Option(("-n", "--name", "--jobname"), REQ, S, "", "JOB_NAME"),
    Option(("--me",), NONE, S),
    Option(("-w", "--nodelist"), REQ, S, "Slurm's hostlist syntax", "HOST_NAME_LIST"),
    Option(("-p", "--partition"), REQ, S, "a Drover queue", "PARTITION"),
    Option(("-q", "--qos"), REQ, S, "every job's QOS is `normal`", "QOS"),
    Option(("-Q", "--quiet"), NONE, S, "no messages; a job that ended already is not an error"),
    Option(("-R", "--reservation"), REQ, S, "Drover has no reservations: no job matches", "RESERVATION"),
    Option(("--sibling",), REQ, M, "Drover is one cluster", "CLUSTER"),
    Option(("-s", "--signal"), REQ, S, "KILL cancels (TERM, a grace period, KILL); the others are delivered",
           "SIGNAL_NAME"),
    Option(("-t", "--state"), REQ, S, "PENDING, RUNNING or SUSPENDED", "JOB_STATE"),
    Option(("--usage",), NONE, S),
    Option(("-u", "--user"), REQ, S, "", "USER_NAME"),
    Option(("-v", "--verbose"), NONE, M, "nothing more to say"),
    Option(("-V", "--version"), NONE, S),
    Option(("--wckey",), REQ, M, "Drover has no WCKeys: every job matches", "WCKEY"),
]
ENVIRONMENT = {"SCANCEL_ACCOUNT": "account", "SCANCEL_CTLD": "ctld", "SCANCEL_CRON": "cron",
               "SCANCEL_HURRY": "hurry", "SCANCEL_NAME": "name", "SCANCEL_PARTITION": "partition",
               "SCANCEL_QOS": "qos", "SCANCEL_STATE": "state", "SCANCEL_USER": "user", "SCANCEL_WCKEY": "wckey"}
YES_NO = {"SCANCEL_BATCH": "batch", "SCANCEL_FULL": "full", "SCANCEL_INTERACTIVE": "interactive",
          "SCANCEL_VERBOSE": "verbose"}
STATES = {"PENDING": "PENDING", "PD": "PENDING", "RUNNING": "RUNNING", "R": "RUNNING",
          "SUSPENDED": "SUSPENDED", "S": "SUSPENDED"}
FILTERS = ("name", "nodelist", "partition", "qos", "reservation", "state", "user", "me")


def main(argv: list[str] | None = None) -> int:
    environ = dict(os.environ)
    parsed = command_line("scancel", argv, OPTIONS)
    if isinstance(parsed, int):
        return parsed
    found, operands = parsed

    def run() -> int:
        return _run(environment_defaults(OPTIONS, ENVIRONMENT, environ) + _yes_no(environ) + found, operands, environ)

    return reported("scancel", run)


def _yes_no(environ: dict[str, str]) -> list[tuple[Option, str | None]]:
    """SCANCEL_BATCH=true and the like, read as scancel reads them: `true` or `T` sets the flag,
    `false` or `F` leaves it unset, in any case; another value is reported, and the flag left
    unset."""
    by_key = {option.key: option for option in OPTIONS}
    out: list[tuple[Option, str | None]] = []
    for variable, key in YES_NO.items():
        value = environ.get(variable)
        if value is None:
            continue
        if value.lower() in ("true", "t"):
            out.append((by_key[key], None))
        elif value.lower() not in ("false", "f"):
            print(f"scancel: error: Unrecognized {variable} value: {value}", file=sys.stderr)
    return out


def _run(found: list[tuple[Option, str | None]], operands: list[str], environ: dict[str, str]) -> int:
    values: dict[str, str] = {}
    flags: set[str] = set()
    for option, value in found:
        if option.mark is Mark.REFUSED:
            raise Refused(f"{option.names[-1]} is not supported by Drover: {option.note}")
        if value is None:
            flags.add(option.key)
        else:
            values[option.key] = value
    if "version" in flags:
        print(VERSION)
        return 0
    if flags & {"help", "usage"}:
        print("Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]] ...")
        return 0
    quiet = "quiet" in flags
    for option, _ in found:
        if option.mark is Mark.APPROXIMATED and not quiet:
            approximated("scancel", option, environ)
    signal = None
    if "signal" in values:
        try:
            signal = job_signal(values["signal"], "--signal")
        except BadRequest:
            raise Refused(f"Unknown job signal: {values['signal']}") from None
    shown: dict[str, str] = {}
    refs: list[str] = []
    for word in operands:
        for ref, spelled in _refs(word):
            refs.append(ref)
            shown[ref] = spelled
    filtered = any(key in values or key in flags for key in FILTERS)
    if not refs and not filtered:
        raise Refused("No job identification provided")
    from drover.client.client import Client

    with Client() as client:
        if filtered:
            refs = _matching(client, refs, values, flags)
            if not refs:
                return 0
        if signal is None or signal.name == "SIGKILL":
            refusals = act(client, client.cancel, refs, shown)
        else:
            refusals = act(client, lambda r: client.signal(r, signal.name), refs, shown)
    status = 0
    for refusal in refusals:
        if quiet and refusal.gone:
            continue
        if not quiet:
            print(f"scancel: error: Kill job error on job id {refusal.slurm_id}: {refusal.reason}", file=sys.stderr)
        status = 1
    return status


def _refs(word: str) -> list[tuple[str, str]]:
    """`12`, `12_3`, `12_[1-3,7]` as Drover's references, each with its Slurm spelling."""
    job, _, rest = word.partition("_")
    if "." in (rest or job):
        raise Refused(f"job steps are not recorded by Drover: {word}")
    if not (job.isascii() and job.isdigit()):
        raise Refused(f"Invalid job id {word}")
    if not rest:
        return [(job, word)]
    if rest.startswith("[") and rest.endswith("]"):
        indices = [int(name) for name in expand(f"i{rest}") for name in [name[1:]]]
        return [(f"{job}.{index}", f"{job}_{index}") for index in indices]
    if rest == "*":
        return [(job, word)]
    if not (rest.isascii() and rest.isdigit()):
        raise Refused(f"Invalid job id {word}")
    return [(slurm_ref(word), word)]


def _matching(client: object, refs: list[str], values: dict[str, str], flags: set[str]) -> list[str]:
    """The active jobs that match every filter (among `refs`, if any were named)."""
    from drover.client.client import Client

    assert isinstance(client, Client)
    users = {current_user()} if "me" in flags else (user_names(values["user"], message="Invalid user name: {}") if "user" in values else None)
    states = None
    if "state" in values:
        states = set()
        for word in split_list(values["state"]):
            if word.upper() not in STATES:
                raise Refused(f"Invalid job state specified: {word}")
            states.add(STATES[word.upper()])
    names = set(split_list(values["name"])) if "name" in values else None
    partitions = set(split_list(values["partition"])) if "partition" in values else None
    nodes = set(expand(values["nodelist"])) if "nodelist" in values else None
    if "reservation" in values or ("qos" in values and "normal" not in values["qos"].lower().split(",")):
        return []
    named = {ref.split(".")[0] for ref in refs}
    out: list[str] = []
    for summary in client.jobs(include_ended=False, limit=100000):
        if users is not None and summary.owner not in users:
            continue
        if names is not None and summary.name not in names:
            continue
        if partitions is not None and summary.queue not in partitions:
            continue
        if named and str(summary.id) not in named:
            continue
        if states is None and nodes is None:
            out += [ref for ref in refs if ref.split(".")[0] == str(summary.id)] or [str(summary.id)]
            continue
        now = time.time()
        for line in slurm_jobs(client.job(summary.id), now, split_pending=True):
            if (states is None or line.state in states) and (nodes is None or line.node in nodes):
                out.append(line.ref)
    return out
