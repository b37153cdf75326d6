"""What condor_q and condor_history share: their command line (with -af's attribute list and
-format's pairs), the ads selected, and how they are shown."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

from drover.compat.htcondor import jobads
from drover.compat.htcondor.common import (
    COMPLETED,
    HELD,
    IDLE,
    REMOVED,
    RUNNING,
    CondorUsageError,
    failed,
    last,
    parse,
    user_name,
)
from drover.compat.htcondor.views import Selection, selection, show
from drover.compat.optiontable import Arity, Mark, Option
from drover.core.errors import DroverError

AUTOFORMAT = ("-af", "-autoformat")
PROJECTION_OPTIONS = [
    Option(("-af", "-autoformat"), Arity.NONE, Mark.SUPPORTED, "the values of these attributes (or expressions), "
           "one ad per line; modifiers after a colon: `j` the job id first, `r`/`V` strings quoted, `l` labels, "
           "`h` a header, `t` tabs, `,` commas, `n` a line each, `g` a blank line after each ad",
           "[:jlhVr,tng] attr..."),
    Option(("-attributes",), Arity.REQUIRED, Mark.SUPPORTED, "with -long and -json: only these", "attr,..."),
    Option(("-constraint",), Arity.REQUIRED, Mark.SUPPORTED, "only ads for which this ClassAd expression is true "
           "(the common operators and functions)", "expression"),
    Option(("-format",), Arity.TWO, Mark.SUPPORTED, "printf's conversions (`%d %s %f %v %V`) of an attribute, "
           "repeatable", "fmt attr"),
    Option(("-json",), Arity.NONE, Mark.SUPPORTED, "the ads as a JSON list"),
    Option(("-long",), Arity.NONE, Mark.SUPPORTED, "every attribute, `Name = value`, a blank line after each ad"),
    Option(("-help",), Arity.NONE, Mark.SUPPORTED, "the usage"),
    Option(("-name",), Arity.REQUIRED, Mark.REFUSED, "Drover's cluster has one queue of jobs (no other schedd)",
           "schedd"),
    Option(("-pool",), Arity.REQUIRED, Mark.REFUSED, "the cluster is the one `drover` finds", "host"),
    Option(("-xml",), Arity.NONE, Mark.REFUSED, "-long or -json"),
]


def split_autoformat(argv: Sequence[str]) -> tuple[list[str], tuple[list[str], str] | None]:
    """-af's attributes are the words that follow it up to the next option."""
    out: list[str] = []
    found: tuple[list[str], str] | None = None
    i = 0
    while i < len(argv):
        word = argv[i]
        name, _, modifiers = word.partition(":")
        if name in AUTOFORMAT or (len(name) > 2 and "-autoformat".startswith(name)):
            attributes: list[str] = []
            i += 1
            while i < len(argv) and not argv[i].startswith("-"):
                attributes.append(argv[i])
                i += 1
            if not attributes:
                raise CondorUsageError(f"Error: {name} requires at least one attribute")
            found = (attributes, modifiers)
            out.append(name)
            continue
        out.append(word)
        i += 1
    return out, found


def run(command: str, argv: list[str], options: list[Option], usage: str, history: bool) -> int:
    try:
        words, autoformat = split_autoformat(argv)
        given, operands = parse(command, words, options)
        keys = {g.key for g in given}
        if "help" in keys:
            print(usage)
            return 0
        for g in given:
            if g.option.mark is Mark.REFUSED:
                raise CondorUsageError(f"{command}: {g.spelled} is not supported by Drover: {g.option.note}")
        chosen = selection(command, operands, [g.value or "" for g in given if g.key == "constraint"])
        display: dict[str, Any] = {
            "autoformat": autoformat, "long": "long" in keys, "json": "json" in keys, "nobatch": "nobatch" in keys,
            "hold": "hold" in keys,
            "format": [tuple((g.value or "").split("\0", 1)) for g in given if g.key == "format"],
            "attributes": [a for g in given if g.key == "attributes" for a in (g.value or "").split(",") if a]}
        limit_given = last(given, "limit") or last(given, "match")
        limit = None
        if limit_given is not None:
            if not (limit_given.value or "").isdigit():
                raise CondorUsageError(f"Error: {limit_given.spelled} requires a number")
            limit = int(limit_given.value or 0)
        from drover.client.client import Client

        with Client() as client:
            ads = _history(client, chosen, limit) if history else _queue(client, chosen, keys, given)
    except CondorUsageError as error:
        print(f"{error}\n{usage}" if str(error).startswith("Error: unrecognized") else str(error), file=sys.stderr)
        return error.status
    except DroverError as error:
        return failed(command, error)
    if limit is not None:
        ads = ads[:limit]
    show(ads, display, time.time(), history, sys.stdout.write)
    return 0


def _queue(client: Any, chosen: Selection, keys: set[str], given: list[Any]) -> list[dict[str, Any]]:
    """The queue's jobs: the user's own (all users' with -allusers, or whose operands name), ended
    ones only while they are kept (leave_in_queue)."""
    everyone = "allusers" in keys or "global" in keys or chosen.by_operand
    submitters = [g.value for g in given if g.key == "submitter" and g.value]
    me = user_name()
    jobs = client.jobs(include_ended=True)
    ads: list[dict[str, Any]] = []
    for job in jobs:
        if submitters and job.owner not in submitters:
            continue
        if not everyone and not submitters and job.owner != me:
            continue
        leave = bool(jobads.extras(job).get("leave"))
        if job.ended_at is not None and not leave:
            continue
        detailed = client.job(job.id)
        for ad in jobads.ads(detailed):
            if ad["JobStatus"] in (COMPLETED, REMOVED) and not leave:  # gone from the queue, as HTCondor's
                continue
            if "hold" in keys and ad["JobStatus"] != HELD:
                continue
            if "run" in keys and ad["JobStatus"] != RUNNING:
                continue
            if "idle" in keys and ad["JobStatus"] != IDLE:
                continue
            if chosen.matches(ad):
                ads.append(ad)
    return ads


def _history(client: Any, chosen: Selection, limit: int | None) -> list[dict[str, Any]]:
    """The ended jobs, newest first (as condor_history reads its history file backwards)."""
    ads: list[dict[str, Any]] = []
    for job in reversed(client.jobs(include_ended=True)):
        if job.ended_at is None and job.array is None:
            continue
        detailed = client.job(job.id)
        for ad in reversed(jobads.ads(detailed)):
            if ad["JobStatus"] in (COMPLETED, REMOVED) and chosen.matches(ad):
                ads.append(ad)
        if limit is not None and len(ads) >= limit:
            break
    return ads
