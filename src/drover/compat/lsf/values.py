"""LSF's value syntaxes, as bsub(1) reads them: memory sizes in LSF_UNIT_FOR_LIMITS, run limits,
begin times, job arrays in -J, resource requirement strings (-R), dependency expressions (-w)
and the variables of -env. Pure: each takes text and returns data, or raises LsfValueError
with the words bsub prints."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta


class LsfValueError(Exception):
    """A value bsub refuses; the message is what it prints."""


_UNITS = {"K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([KMGTPE]?)B?", re.IGNORECASE)


def size_mib(text: str, unit: str = "KB") -> int:
    """A memory size, `4096`, `4GB`, `512M`: a bare number is in `unit` (LSF_UNIT_FOR_LIMITS of
    lsf.conf, KB unless set). LSF's K is 1024. In MiB, rounded up."""
    match = _SIZE.fullmatch(text.strip())
    if match is None or (text.strip()[-1:].upper() == "B" and not match.group(2)):
        raise LsfValueError(f"{text}: Bad argument for memory limit. Job not submitted.")
    number, letter = float(match.group(1)), (match.group(2) or unit[:1]).upper()
    size = number * 1024 ** _UNITS[letter]  # bytes
    return max(1, int(-(-size // (1024 * 1024))))


def run_limit_s(text: str) -> int:
    """-W `[hour:]minute[/host_name | /host_model]`, in seconds."""
    limit = text.strip().split("/")[0]
    parts = limit.split(":")
    if not 1 <= len(parts) <= 2 or not all(p.isascii() and p.isdigit() for p in parts):
        raise LsfValueError(f"{text}: Bad RUNLIMIT specification. Job not submitted.")
    minutes = int(parts[-1]) + (int(parts[0]) * 60 if len(parts) == 2 else 0)
    if minutes < 1:
        raise LsfValueError(f"{text}: Bad RUNLIMIT specification. Job not submitted.")
    return minutes * 60


def begin_time(text: str, now: float) -> float:
    """-b `[[year:][month:]day:]hour:minute`: the next such moment (a time of day already past
    today is tomorrow's, a day already past this month next month's)."""
    parts = text.strip().split(":")
    if not 2 <= len(parts) <= 5 or not all(p.isascii() and p.isdigit() for p in parts):
        raise LsfValueError(f"{text}: Bad time specification. Job not submitted.")
    numbers = [int(p) for p in parts]
    current = datetime.fromtimestamp(now)
    year, month, day = current.year, current.month, current.day
    hour, minute = numbers[-2], numbers[-1]
    if len(numbers) >= 3:
        day = numbers[-3]
    if len(numbers) >= 4:
        month = numbers[-4]
    if len(numbers) == 5:
        year = numbers[0]
    try:
        moment = datetime(year, month, day, hour, minute)
    except ValueError:
        raise LsfValueError(f"{text}: Bad time specification. Job not submitted.") from None
    if moment < current:
        if len(numbers) == 2:
            moment += timedelta(days=1)
        elif len(numbers) == 3:
            moment = moment.replace(month=moment.month % 12 + 1, year=moment.year + (moment.month == 12))
    return moment.timestamp()


_ARRAY = re.compile(r"(.*)\[([0-9:,\-]+)\](?:%([0-9]+))?")


def job_name(text: str) -> tuple[str, str | None, int | None]:
    """-J `name` or `name[1-10:2,15]%N`: the name, Drover's array indices ("1-10:2,15"), and
    how many elements may run at once."""
    match = _ARRAY.fullmatch(text.strip())
    if match is None:
        if "[" in text or "]" in text:
            raise LsfValueError(f"{text}: Bad job name. Job not submitted.")
        return text, None, None
    name, spec, slots = match.groups()
    for item in spec.split(","):
        if not re.fullmatch(r"[0-9]+(-[0-9]+(:[0-9]+)?)?", item):
            raise LsfValueError(f"{text}: Bad job array index list. Job not submitted.")
        low, _, rest = item.partition("-")
        high = rest.split(":")[0]
        if high and int(high) < int(low):
            raise LsfValueError(f"{text}: Bad job array index list. Job not submitted.")
    if slots is not None and int(slots) < 1:
        raise LsfValueError(f"{text}: Bad job array index list. Job not submitted.")
    return name, spec, int(slots) if slots is not None else None


@dataclass
class Requirement:
    """What a resource requirement string (-R) asks: its sections, each as LSF names it."""

    select: list[str] = field(default_factory=list)
    rusage: dict[str, str] = field(default_factory=dict)
    span: dict[str, str] = field(default_factory=dict)
    other: list[str] = field(default_factory=list)  # order[], same[], cu[], affinity[]: by name


_SECTION = re.compile(r"\s*(select|order|rusage|span|same|cu|affinity)\s*\[([^\]]*)\]\s*")


def requirement(text: str, into: Requirement | None = None) -> Requirement:
    """-R `[select[...]] [rusage[...]] [span[...]] [order[...]] [same[...]]`: text before any
    section keyword is the selection."""
    out = into or Requirement()
    rest = text.strip()
    if rest and not _SECTION.match(rest):
        head = re.search(r"\b(select|order|rusage|span|same|cu|affinity)\s*\[", rest)
        selection = rest[:head.start()] if head else rest
        out.select.append(selection.strip())
        rest = rest[len(selection):]
    while rest.strip():
        match = _SECTION.match(rest)
        if match is None:
            raise LsfValueError(f"{text}: Bad resource requirement syntax. Job not submitted.")
        section, body = match.groups()
        if section == "select":
            out.select.append(body.strip())
        elif section in ("rusage", "span"):
            target = out.rusage if section == "rusage" else out.span
            for item in re.split(r"[:,]", body):
                if not item.strip():
                    continue
                key, equals, amount = item.partition("=")
                if not equals or not key.strip():
                    raise LsfValueError(f"{text}: Bad resource requirement syntax. Job not submitted.")
                target[key.strip()] = amount.strip()
        else:
            out.other.append(section)
        rest = rest[match.end():]
    return out


# bsub -w's conditions and Drover's dependency kinds: done waits for success, exit for failure,
# ended for either, started for a start. post_done and post_err wait for the post-execution
# processing, which a Drover job's end includes.
CONDITIONS = {"done": "afterok", "ended": "afterany", "exit": "afternotok", "started": "after",
              "post_done": "afterok", "post_err": "afternotok"}
# numdone(ID, *) and the like: every element of an array.
COUNT_CONDITIONS = {"numdone": "afterok", "numended": "afterany", "numexit": "afternotok", "numstart": "after"}


@dataclass(frozen=True)
class Dependency:
    kind: str  # Drover's name
    job: int | None  # None: `name` names it
    task: int | None = None
    name: str | None = None
    approximate: str = ""  # why it is only LSF's condition in part ("" when exactly)


def dependencies(text: str) -> tuple[list[Dependency], bool]:
    """-w `done(12) && ended("name")`: the conditions, and whether any one of them is enough
    (all joined by ||; else all joined by &&). Mixed operators, parentheses beyond a condition's
    and `!` are refused: Drover's dependencies are all of a list, or any."""
    expression = text.strip()
    if not expression:
        raise LsfValueError(f"{text}: Bad dependency expression. Job not submitted.")
    ands, ors = "&&" in expression, "||" in expression
    if ands and ors or "!" in expression:
        raise LsfValueError(f"{text}: Drover cannot wait on this dependency expression (its dependencies "
                            "are all of a list, or any of it: use only && or only ||). Job not submitted.")
    parts = [p.strip() for p in expression.split("||" if ors else "&&")]
    return [_condition(part, text) for part in parts], ors


_CONDITION = re.compile(r"([a-z_]+)\s*\(\s*(.*?)\s*\)")


def _condition(part: str, text: str) -> Dependency:
    bad = LsfValueError(f"{text}: Bad dependency expression. Job not submitted.")
    match = _CONDITION.fullmatch(part)
    if match is None:
        if "(" in part or ")" in part or not part:
            raise bad
        kind, arguments = "done", [part]
    else:
        kind, arguments = match.group(1), [a.strip() for a in match.group(2).split(",")]
    if kind in COUNT_CONDITIONS:
        if len(arguments) != 2 or arguments[1] != "*":
            raise LsfValueError(f"{text}: Drover waits on every element of an array, not on a count of them "
                                f"({kind}(ID, *)). Job not submitted.")
        job, task, name = _job(arguments[0], bad)
        return Dependency(COUNT_CONDITIONS[kind], job, task, name)
    if kind not in CONDITIONS:
        raise LsfValueError(f"{text}: Drover has no {kind}() dependencies. Job not submitted.")
    why = ""
    if kind == "exit" and len(arguments) == 2:
        why = f"exit({arguments[0]}, {arguments[1]}) waits for any failure of the job, whatever its exit code"
    elif len(arguments) != 1:
        raise bad
    if kind in ("post_done", "post_err"):
        why = f"{kind}() waits for the job's end, which includes its post-execution processing"
    job, task, name = _job(arguments[0], bad)
    return Dependency(CONDITIONS[kind], job, task, name, why)


def _job(text: str, bad: LsfValueError) -> tuple[int | None, int | None, str | None]:
    word = text.strip().strip("\"'")
    match = re.fullmatch(r"([0-9]+)(?:\[([0-9]+)\])?", word)
    if match is not None:
        return int(match.group(1)), int(match.group(2)) if match.group(2) else None, None
    if not word or "*" in word or "[" in word:
        raise bad
    return None, None, word


@dataclass(frozen=True)
class Variables:
    everything: bool  # all of bsub's environment
    excluded: frozenset[str]  # `~NAME`
    chosen: tuple[tuple[str, str | None], ...]  # NAME=VALUE, or NAME (from bsub's environment)


def environment_spec(text: str) -> Variables:
    """-env `all` (the default), `none`, `all, ~NAME, NAME=VALUE` or `NAME1, NAME2=VALUE`."""
    from drover.compat.pbs.submission import (
        _variables as split_commas,  # qsub -v's list: quotes hold commas
    )

    items = [item.strip() for item in split_commas(text) if item.strip()]
    if not items:
        raise LsfValueError(f"{text}: Bad -env value. Job not submitted.")
    first = items[0].lower()
    everything = first == "all"
    if first in ("all", "none"):
        items = items[1:]
        if first == "none" and items:
            raise LsfValueError(f"{text}: -env none cannot be given with variables. Job not submitted.")
    excluded, chosen = set(), []
    for item in items:
        if item.startswith("~"):
            excluded.add(item[1:])
            continue
        name, equals, setting = item.partition("=")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise LsfValueError(f"{text}: Bad -env value. Job not submitted.")
        chosen.append((name, setting if equals else None))
    return Variables(everything, frozenset(excluded), tuple(chosen))
