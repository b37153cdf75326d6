"""What condor_rm, condor_hold and condor_release share: the jobs named by cluster,
cluster.proc, user, -constraint or -all, acted on through the client, and each outcome said as
HTCondor's tools say it (`All jobs in cluster 12 have been marked for removal`, `Job 12.3 not
found`), exiting 1 when any failed."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

from drover.compat.htcondor import classad, jobads
from drover.compat.htcondor.common import (
    COMPLETED,
    REMOVED,
    CondorUsageError,
    failed,
    parse,
    user_name,
)
from drover.compat.optiontable import Arity, Mark, Option
from drover.core.errors import DroverError, NotFound

OPTIONS = [
    Option(("-all",), Arity.NONE, Mark.SUPPORTED, "every job of yours (all jobs for root)"),
    Option(("-constraint",), Arity.REQUIRED, Mark.SUPPORTED, "the jobs for which this ClassAd expression is true",
           "expression"),
    Option(("-help",), Arity.NONE, Mark.SUPPORTED, "the usage"),
    Option(("-name",), Arity.REQUIRED, Mark.REFUSED, "Drover's cluster has one queue of jobs (no other schedd)",
           "schedd"),
    Option(("-pool",), Arity.REQUIRED, Mark.REFUSED, "the cluster is the one `drover` finds", "host"),
]


def usage(command: str, extra: str = "") -> str:
    return (f"Usage: {command} [general-opts] [constraint-opts] [-reason <reason-string>]\n"
            "    where [constraint-opts] are one or more of\n"
            "\t<cluster.proc>\t\tOperate on the specified job\n"
            "\t<cluster>\t\tOperate on all jobs in the specified cluster\n"
            "\t<user>\t\t\tOperate on all jobs owned by user\n"
            "\t-constraint <expr>\tOperate on all jobs matching the <expr>\n"
            f"\t-all\t\t\tOperate on all jobs{extra}")


def run(command: str, argv: list[str], options: list[Option], verb: str,
        act: Callable[[Any, list[str]], list[Any]], wanted: Callable[[dict[str, Any]], bool]) -> int:
    """`verb`: "removal", "hold", "release" (the words of each message); `wanted(ad)`: a job the
    action applies to (condor_release: held ones)."""
    try:
        given, operands = parse(command, argv, options)
        keys = {g.key for g in given}
        if "help" in keys:
            print(usage(command))
            return 0
        for g in given:
            if g.option.mark is Mark.REFUSED:
                raise CondorUsageError(f"{command}: {g.spelled} is not supported by Drover: {g.option.note}")
        constraints = [g.value or "" for g in given if g.key == "constraint"]
        if not operands and not constraints and "all" not in keys:
            raise CondorUsageError(usage(command))
        for word in operands:
            if not re.fullmatch(r"\d+(\.\d+)?|[A-Za-z_][A-Za-z0-9_.@-]*", word):
                raise CondorUsageError(f"{command}: invalid job id or user: {word}")
        expressions = []
        for text in constraints:
            try:
                expressions.append(classad.parse(text))
            except classad.ClassAdError as error:
                raise CondorUsageError(f"{command}: invalid constraint {text}: {error}") from None
        from drover.client.client import Client

        with Client() as client:
            return _act(command, client, operands, expressions, "all" in keys, verb, act, wanted, "forcex" in keys)
    except CondorUsageError as error:
        print(str(error), file=sys.stderr)
        return error.status
    except DroverError as error:
        return failed(command, error)


_PAST = {"removal": "marked for removal", "hold": "held", "release": "released"}


def _act(command: str, client: Any, operands: list[str], expressions: list[classad.Expr], everything: bool,
         verb: str, act: Callable[[Any, list[str]], list[Any]], wanted: Callable[[dict[str, Any]], bool],
         forcex: bool = False) -> int:
    status = 0
    done = _PAST[verb]
    for word in operands:
        if re.fullmatch(r"\d+\.\d+", word):
            cluster, proc = (int(part) for part in word.split("."))
            ad = _proc_ad(client, cluster, proc)
            if forcex and ad is not None and ad["JobStatus"] == REMOVED:
                print(f"Job {word} {done}")
                continue
            if ad is None or ad["JobStatus"] in (COMPLETED, REMOVED):
                print(f"Job {word} not found", file=sys.stderr)
                status = 1
                continue
            if not wanted(ad) or not _ok(act(client, [_ref(cluster, proc, ad)])):
                print(f"Job {word} not {done}", file=sys.stderr)
                status = 1
                continue
            print(f"Job {word} {done}")
        elif word.isdigit():
            ads = _cluster_ads(client, int(word))
            targets = [ad for ad in ads if ad["JobStatus"] not in (COMPLETED, REMOVED) and wanted(ad)]
            if not targets or not _ok(act(client, [word] if len(targets) == len(ads) else
                                      [_ref(ad["ClusterId"], ad["ProcId"], ad) for ad in targets])):
                print(f"Couldn't find/{_infinitive(verb)} all jobs in cluster {word}", file=sys.stderr)
                status = 1
                continue
            print(f"All jobs in cluster {word} have been {done}")
        else:
            owner = word.split("@")[0]
            if owner != user_name() and user_name() != "root":
                print(f"Couldn't find/{_infinitive(verb)} all of user {owner}'s job(s)", file=sys.stderr)
                status = 1
                continue
            def owned(ad: dict[str, Any], owner: str = owner) -> bool:
                return bool(ad["Owner"] == owner)

            if not _matching(command, client, owned, act, wanted):
                print(f"Couldn't find/{_infinitive(verb)} all of user {owner}'s job(s)", file=sys.stderr)
                status = 1
                continue
            print(f"All jobs of user \"{owner}\" have been {done}")
    if expressions:
        text = " && ".join(f"({e.text})" for e in expressions)
        if not _matching(command, client, lambda ad: all(e.matches(ad) for e in expressions), act, wanted):
            print(f"Couldn't find/{_infinitive(verb)} all jobs matching constraint {text}", file=sys.stderr)
            status = 1
        else:
            print(f"All jobs matching constraint {text} have been {done}")
    if everything:
        me = user_name()
        if not _matching(command, client, lambda ad: me == "root" or ad["Owner"] == me, act, wanted):
            print(f"Couldn't find/{_infinitive(verb)} all jobs", file=sys.stderr)
            status = 1
        else:
            print(f"All jobs have been {done}")
    return status


def _infinitive(verb: str) -> str:
    return {"removal": "remove", "hold": "hold", "release": "release"}[verb]


def _ref(cluster: int, proc: int, ad: dict[str, Any]) -> str:
    return f"{cluster}.{proc}" if ad.get("_array") else str(cluster)


def _ok(results: list[Any]) -> bool:
    return bool(results) and all(r.ok for r in results)


def _cluster_ads(client: Any, cluster: int) -> list[dict[str, Any]]:
    try:
        job = client.job(cluster)
    except NotFound:
        return []
    return [{**ad, "_array": job.array is not None} for ad in jobads.ads(job)]


def _proc_ad(client: Any, cluster: int, proc: int) -> dict[str, Any] | None:
    return next((ad for ad in _cluster_ads(client, cluster) if ad["ProcId"] == proc), None)


def _matching(command: str, client: Any, predicate: Callable[[dict[str, Any]], bool],
              act: Callable[[Any, list[str]], list[Any]], wanted: Callable[[dict[str, Any]], bool]) -> bool:
    refs: list[str] = []
    for job in client.jobs():
        ads = _cluster_ads(client, job.id)
        chosen = [ad for ad in ads if ad["JobStatus"] not in (COMPLETED, REMOVED) and wanted(ad) and predicate(ad)]
        if chosen and len(chosen) == len(ads):
            refs.append(str(job.id))
        else:
            refs += [_ref(ad["ClusterId"], ad["ProcId"], ad) for ad in chosen]
    return bool(refs) and _ok(act(client, refs))
