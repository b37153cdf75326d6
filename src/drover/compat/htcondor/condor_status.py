"""condor_status: the cluster's nodes as HTCondor's slots (one partitionable slot per node),
with the default table, -af, -format, -long, -json and -constraint over the machine ads."""

from __future__ import annotations

import sys
from typing import Any

from drover.compat.htcondor import classad
from drover.compat.htcondor.common import CondorUsageError, failed, parse
from drover.compat.htcondor.machines import machine_ad
from drover.compat.htcondor.query import PROJECTION_OPTIONS, split_autoformat
from drover.compat.htcondor.views import as_json, autoformat, format_pairs, long, projected
from drover.compat.optiontable import Arity, Mark, Option
from drover.core.errors import DroverError

OPTIONS = sorted([
    *PROJECTION_OPTIONS,
    Option(("-any",), Arity.NONE, Mark.SUPPORTED, "every ad (the nodes' only)"),
    Option(("-avail",), Arity.NONE, Mark.SUPPORTED, "slots that can take a job"),
    Option(("-claimed",), Arity.NONE, Mark.SUPPORTED, "slots that are busy"),
    Option(("-compact",), Arity.NONE, Mark.MEANINGLESS, "one line per node already"),
    Option(("-schedd",), Arity.NONE, Mark.REFUSED, "Drover's controller is no schedd ad"),
    Option(("-total",), Arity.NONE, Mark.SUPPORTED, "the totals only"),
], key=lambda o: o.names[0])
USAGE = """Usage: condor_status [help-opt] [query-opt] [custom-opts] [display-opt] [name ...]
    where [query-opt] is one of -avail, -claimed, -any
    [display-opt] is one of -long, -json, -total, -af <attr>..., -format <fmt> <attr>
    [custom-opts] is -constraint <expr>"""


def main(argv: list[str] | None = None) -> int:
    try:
        words, af = split_autoformat(list(sys.argv[1:] if argv is None else argv))
        given, operands = parse("condor_status", words, OPTIONS)
        keys = {g.key for g in given}
        if "help" in keys:
            print(USAGE)
            return 0
        for g in given:
            if g.option.mark is Mark.REFUSED:
                raise CondorUsageError(f"condor_status: {g.spelled} is not supported by Drover: {g.option.note}")
        try:
            constraints = [classad.parse(g.value or "") for g in given if g.key == "constraint"]
        except classad.ClassAdError as error:
            raise CondorUsageError(f"condor_status: invalid constraint: {error}") from None
        from drover.client.client import Client

        with Client() as client:
            nodes = client.nodes()
    except CondorUsageError as error:
        print(f"{error}\n{USAGE}" if str(error).startswith("Error: unrecognized") else str(error), file=sys.stderr)
        return error.status
    except DroverError as error:
        return failed("condor_status", error)
    ads = [machine_ad(node) for node in nodes]
    if operands:
        ads = [ad for ad in ads if ad["Machine"] in operands or ad["Name"] in operands
               or ad["Machine"].split(".")[0] in operands]
    if "avail" in keys:
        ads = [ad for ad in ads if ad["State"] == "Unclaimed"]
    if "claimed" in keys:
        ads = [ad for ad in ads if ad["State"] == "Claimed"]
    ads = [ad for ad in ads if all(c.matches(ad) for c in constraints)]
    if af is not None:
        for line in autoformat(ads, *af):
            print(line)
    elif any(g.key == "format" for g in given):
        sys.stdout.write(format_pairs(ads, [tuple((g.value or "").split("\0", 1)) for g in given  # type: ignore[misc]
                                            if g.key == "format"]))
    elif "json" in keys:
        print(as_json(projected(ads, [a for g in given if g.key == "attributes" for a in (g.value or "").split(",")])))
    elif "long" in keys:
        for line in long(projected(ads, [a for g in given if g.key == "attributes"
                                         for a in (g.value or "").split(",")])):
            print(line)
    else:
        _table(ads, "total" in keys)
    return 0


def _table(ads: list[dict[str, Any]], totals_only: bool) -> None:
    if not totals_only:
        print(f"{'Name':<29} {'OpSys':<6} {'Arch':<7} {'State':<9} {'Activity':<9} {'LoadAv':>6} {'Mem':>6}   "
              f"{'ActvtyTime'}")
        print()
        for ad in ads:
            print(f"{ad['Name']:<29} {ad['OpSys']:<6} {ad['Arch']:<7} {ad['State']:<9} {ad['Activity']:<9} "
                  f"{ad['LoadAvg']:>6.3f} {ad['TotalMemory']:>6}   0+00:00:00")
        print()
    states = ("Owner", "Claimed", "Unclaimed", "Matched", "Preempting", "Drained")
    print(f"{'':>15} {'Total':>5} " + " ".join(f"{s:>10}" for s in states) + f" {'Backfill':>8} {'BkIdle':>6}")
    arch = f"{ads[0]['Arch']}/{ads[0]['OpSys']}" if ads else "X86_64/LINUX"
    counts = [sum(1 for ad in ads if ad["State"] == s) for s in states]
    print(f"{arch:>15} {len(ads):>5} " + " ".join(f"{n:>10}" for n in counts) + f" {0:>8} {0:>6}")
    print()
    print(f"{'Total':>15} {len(ads):>5} " + " ".join(f"{n:>10}" for n in counts) + f" {0:>8} {0:>6}")



if __name__ == "__main__":
    raise SystemExit(main())
