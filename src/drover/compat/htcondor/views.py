"""How condor_q and condor_history show job ads: the batch table (the default), -nobatch's one
line per job, -af/-autoformat, -format, -long and -json; and which ads are shown (operands:
`cluster`, `cluster.proc`, `owner`; -constraint)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from drover.compat.htcondor import classad
from drover.compat.htcondor.common import (
    COMPLETED,
    HELD,
    IDLE,
    REMOVED,
    RUNNING,
    STATUS_LETTER,
    SUSPENDED,
    CondorUsageError,
)


@dataclass
class Selection:
    """The operands and -constraint: an ad is shown when it matches any operand (none: all)
    and every constraint."""

    clusters: set[int] = field(default_factory=set)
    procs: set[tuple[int, int]] = field(default_factory=set)
    owners: set[str] = field(default_factory=set)
    constraints: list[classad.Expr] = field(default_factory=list)

    @property
    def by_operand(self) -> bool:
        return bool(self.clusters or self.procs or self.owners)

    def matches(self, ad: dict[str, Any]) -> bool:
        if self.by_operand and not (ad["ClusterId"] in self.clusters or (ad["ClusterId"], ad["ProcId"]) in self.procs
                                    or ad["Owner"] in self.owners):
            return False
        return all(c.matches(ad) for c in self.constraints)


def selection(command: str, operands: list[str], constraints: list[str]) -> Selection:
    out = Selection()
    for word in operands:
        if re.fullmatch(r"\d+", word):
            out.clusters.add(int(word))
        elif re.fullmatch(r"\d+\.\d+", word):
            cluster, proc = word.split(".")
            out.procs.add((int(cluster), int(proc)))
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", word):
            out.owners.add(word.split("@")[0])
        else:
            raise CondorUsageError(f"Error: unrecognized argument {word}")
    for text in constraints:
        try:
            out.constraints.append(classad.parse(text))
        except classad.ClassAdError:
            raise CondorUsageError(f"Error: -constraint requires another parameter\n"
                                   f"Error: Invalid constraint expression: {text}") from None
    return out


def _duration(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    days, seconds = divmod(seconds, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    return f"{days}+{hours:02d}:{minutes:02d}:{seconds:02d}"


def _date(stamp: float) -> str:
    return time.strftime("%m/%d %H:%M", time.localtime(stamp))


def _command(ad: dict[str, Any]) -> str:
    import os

    return (os.path.basename(str(ad.get("Cmd", ""))) + " " + str(ad.get("Args", ""))).strip()


def _run_time(ad: dict[str, Any], now: float) -> float:
    started = ad.get("JobCurrentStartDate")
    if started is None:
        return 0.0
    if ad["JobStatus"] == RUNNING:
        return now - float(started)
    return float(ad.get("RemoteWallClockTime", 0.0))


def schedd_banner(now: float) -> str:
    import socket

    from drover.compat.htcondor.common import schedd_address

    return (f"\n\n-- Schedd: {socket.gethostname()} : {schedd_address()} @ "
            f"{time.strftime('%m/%d/%y %H:%M:%S', time.localtime(now))}")


def nobatch(ads: list[dict[str, Any]], now: float, history: bool = False) -> list[str]:
    if history:
        lines = [" ID     OWNER          SUBMITTED   RUN_TIME     ST  COMPLETED   CMD"]
        for ad in ads:
            done = ad.get("CompletionDate") or 0
            lines.append(f"{ad['ClusterId']:>4}.{ad['ProcId']:<3} {ad['Owner']:<14} {_date(ad['QDate'])} "
                         f"{_duration(_run_time(ad, now)):>12} {STATUS_LETTER[ad['JobStatus']]:<3} "
                         f"{_date(done) if done else '':<11} {_command(ad)}")
        return lines
    lines = [" ID      OWNER            SUBMITTED     RUN_TIME ST PRI SIZE CMD"]
    for ad in ads:
        size = ad.get("ImageSize", 0) / 1024
        lines.append(f"{ad['ClusterId']:>5}.{ad['ProcId']:<3} {ad['Owner']:<14} {_date(ad['QDate'])} "
                     f"{_duration(_run_time(ad, now))} {STATUS_LETTER[ad['JobStatus']]}  {ad['JobPrio']:<4} "
                     f"{size:<4.1f} {_command(ad)}")
    return lines


def held(ads: list[dict[str, Any]]) -> list[str]:
    """condor_q -hold: each held job with when and why it was held."""
    lines = [" ID      OWNER          HELD_SINCE  HOLD_REASON"]
    for ad in ads:
        lines.append(f"{ad['ClusterId']:>5}.{ad['ProcId']:<3} {ad['Owner']:<14} {_date(ad['EnteredCurrentStatus'])} "
                     f"{ad.get('HoldReason', '')}")
    return lines


def batch(ads: list[dict[str, Any]]) -> list[str]:
    """The default: one line per batch (a JobBatchName, else a cluster), counts by state."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for ad in ads:
        name = ad.get("JobBatchName") or f"ID: {ad['ClusterId']}"
        groups.setdefault((ad["Owner"], name), []).append(ad)
    lines = ["OWNER BATCH_NAME    SUBMITTED   DONE   RUN    IDLE  HOLD  TOTAL JOB_IDS"]
    for (owner, name), members in groups.items():
        def count(*statuses: int, group: list[dict[str, Any]] = members) -> str:
            n = sum(1 for ad in group if ad["JobStatus"] in statuses)
            return str(n) if n else "_"
        ids = sorted((ad["ClusterId"], ad["ProcId"]) for ad in members)
        span = f"{ids[0][0]}.{ids[0][1]}" + (f"-{ids[-1][1]}" if len(ids) > 1 and ids[0][0] == ids[-1][0] else
                                             f" ... {ids[-1][0]}.{ids[-1][1]}" if len(ids) > 1 else "")
        lines.append(f"{owner:<5} {name:<12} {_date(min(ad['QDate'] for ad in members))} {count(COMPLETED, REMOVED):>6} "
                     f"{count(RUNNING, SUSPENDED):>6} {count(IDLE):>6} {count(HELD):>5} {len(members):>6} {span}")
    return lines


def totals(ads: list[dict[str, Any]], label: str) -> str:
    def n(*statuses: int) -> int:
        return sum(1 for ad in ads if ad["JobStatus"] in statuses)

    return (f"Total for {label}: {len(ads)} jobs; {n(COMPLETED)} completed, {n(REMOVED)} removed, {n(IDLE)} idle, "
            f"{n(RUNNING)} running, {n(HELD)} held, {n(SUSPENDED)} suspended")


def _lookup(ad: dict[str, Any], name: str) -> Any:
    """An attribute, or an expression over the ad (-af takes either)."""
    lowered = {k.lower(): v for k, v in ad.items()}
    if name.lower() in lowered:
        value = lowered[name.lower()]
        return value.evaluate(ad) if isinstance(value, classad.Expr) else value
    try:
        return classad.evaluate(name, ad)
    except classad.ClassAdError:
        return classad.UNDEFINED


def _plain(value: Any) -> str:
    if value is classad.UNDEFINED:
        return "undefined"
    if value is classad.ERROR:
        return "error"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(value)
    return classad.unparse(value)


def autoformat(ads: list[dict[str, Any]], attributes: list[str], modifiers: str) -> list[str]:
    """-af[:modifiers] attr...: each ad's values on a line, separated by a space (`,` commas, `t`
    tabs, `n` one per line); `j` the job id first; `l` NAME = value; `V`/`r` strings quoted;
    `h` a header of the names."""
    if "t" in modifiers:
        separator = "\t"
    elif "," in modifiers:
        separator = ","
    elif "n" in modifiers:
        separator = "\n"
    else:
        separator = " "
    quoted = "V" in modifiers or "r" in modifiers
    lines: list[str] = []
    if "h" in modifiers:
        lines.append(separator.join((["ID"] if "j" in modifiers else []) + attributes))
    for ad in ads:
        words = [f"{ad['ClusterId']}.{ad['ProcId']}"] if "j" in modifiers else []
        for name in attributes:
            value = _lookup(ad, name)
            text = classad.unparse(value) if quoted and isinstance(value, str) else _plain(value)
            words.append(f"{name} = {text}" if "l" in modifiers else text)
        lines.append(separator.join(words))
        if "g" in modifiers:
            lines.append("")
    return lines


_CONVERSION = re.compile(r"%(?:%|[-+ 0#]*\d*(?:\.\d+)?[diouxXeEfgGcsvV])")


def format_pairs(ads: list[dict[str, Any]], pairs: list[tuple[str, str]]) -> str:
    """-format FMT ATTR ...: printf's conversions, %v the value as it is, %V quoted; no newline
    unless the format has one; an undefined attribute prints nothing for its pair."""
    out = ""
    for ad in ads:
        for form, name in pairs:
            value = _lookup(ad, name)
            if value is classad.UNDEFINED:
                continue
            def convert(match: re.Match[str], value: Any = value) -> str:
                return _convert(match.group(0), value)

            out += _CONVERSION.sub(convert, form.replace("\\n", "\n").replace("\\t", "\t"))
    return out


def _convert(spec: str, value: Any) -> str:
    if spec == "%%":
        return "%"
    kind = spec[-1]
    if kind == "v":
        return _plain(value)
    if kind == "V":
        return classad.unparse(value)
    try:
        if kind in "diouxXc":
            return (spec[:-1] + ("d" if kind in "iu" else kind)) % int(value)
        if kind in "eEfgG":
            return spec % float(value)
    except (TypeError, ValueError):
        return _plain(value)
    return spec % _plain(value)


def long(ads: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for ad in ads:
        lines += [f"{name} = {classad.unparse(value)}" for name, value in sorted(ad.items(), key=lambda i: i[0].lower())]
        lines.append("")
    return lines


def as_json(ads: list[dict[str, Any]]) -> str:
    def plain(value: Any) -> Any:
        if isinstance(value, classad.Expr):
            return f"\\/Expr({value.text})\\/"
        if value is classad.UNDEFINED or value is classad.ERROR:
            return None
        return value

    return json.dumps([{k: plain(v) for k, v in sorted(ad.items())} for ad in ads], indent=2)


def projected(ads: list[dict[str, Any]], given_attributes: list[str]) -> list[dict[str, Any]]:
    """-attributes A,B: only those (with -long and -json)."""
    if not given_attributes:
        return ads
    wanted = {a.lower() for a in given_attributes}
    return [{k: v for k, v in ad.items() if k.lower() in wanted} for ad in ads]


def show(ads: list[dict[str, Any]], given: dict[str, Any], now: float, history: bool,
         write: Callable[[str], object]) -> None:
    """Print the ads as the options ask: `given` holds autoformat (attrs, modifiers), format
    pairs, long, json, nobatch, attributes."""
    if given.get("autoformat") is not None:
        attributes, modifiers = given["autoformat"]
        for line in autoformat(ads, attributes, modifiers):
            write(line + "\n")
    elif given.get("format"):
        write(format_pairs(ads, given["format"]))
    elif given.get("json"):
        write(as_json(projected(ads, given.get("attributes", []))) + "\n")
    elif given.get("long"):
        for line in long(projected(ads, given.get("attributes", []))):
            write(line + "\n")
    else:
        if not history:
            write(schedd_banner(now) + "\n")
        if given.get("hold"):
            lines = held(ads)
        elif given.get("nobatch") or history:
            lines = nobatch(ads, now, history)
        else:
            lines = batch(ads)
        for line in lines:
            write(line + "\n")
        if not history:
            write("" + "\n")
            write(totals(ads, "query") + "\n")
