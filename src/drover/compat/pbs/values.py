"""PBS's value syntaxes, as pbs_resources(7B), qsub(1B) and Torque's qsub read them: sizes,
durations, `select` and `nodes` chunks, array ranges (-J, -t), dependencies (-W depend=) and
the date of -a. Pure: each takes text and returns data, or raises PbsValueError with the words
PBS's commands print."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta


class PbsValueError(Exception):
    """A value PBS refuses; the message is what qsub prints after `qsub: `."""


# pbs_resources(7B): a size is an integer and a suffix b, kb, mb, gb, tb, pb (bytes) or w, kw...
# (words of 8 bytes), in either case; a bare number is bytes. K is 1024.
_SIZE = re.compile(r"([0-9]+)([kmgtp]?)([bw]?)", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def size_bytes(text: str) -> int:
    match = _SIZE.fullmatch(text.strip())
    if match is None or (match.group(2) and not match.group(3)):
        raise PbsValueError(f"Illegal attribute or resource value: {text!r} is not a size (e.g. 512mb, 4gb)")
    number, power, unit = match.groups()
    scale: int = 1024 ** _POWERS[power.lower()] * (8 if unit.lower() == "w" else 1)
    return int(number) * scale


def size_mib(text: str) -> int:
    """A size in MiB, rounded up: what Drover's memory is counted in."""
    return max(1, -(-size_bytes(text) // (1024 * 1024)))


def duration_s(text: str) -> int:
    """walltime, cput: `[[HH:]MM:]SS[.ms]`, or a number of seconds."""
    parts = text.strip().split(":")
    if not 1 <= len(parts) <= 3 or not all(re.fullmatch(r"[0-9]+(\.[0-9]*)?", p) for p in parts) \
            or any("." in p for p in parts[:-1]):
        raise PbsValueError(f"Illegal attribute or resource value: {text!r} is not a duration ([[HH:]MM:]SS)")
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + float(part)
    return int(seconds + 0.999)


def hms(seconds: float) -> str:
    """A duration as qstat writes walltime and cput: HH:MM:SS (hours past 99 too)."""
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


@dataclass(frozen=True)
class Chunk:
    """One kind of chunk of a `select` (PBS Pro) or `nodes` (Torque) request: `count` chunks,
    each of `ncpus` CPUs, `mem_mib` memory (None: not asked) and `ngpus` GPUs, and the other
    resources asked of each chunk."""

    count: int
    ncpus: int
    mem_mib: int | None = None
    ngpus: int = 0
    other: tuple[tuple[str, str], ...] = ()


def _count(text: str, what: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise PbsValueError(f"Illegal attribute or resource value: {what}={text}")
    return int(text)


def select(text: str) -> list[Chunk]:
    """`select=[N:]res=val[:res=val...][+[N:]...]`: one Chunk per `+`-joined part."""
    chunks = []
    for part in text.split("+"):
        fields = part.split(":")
        count = 1
        if fields and fields[0].isdigit():
            count = _count(fields.pop(0), "select")
        ncpus, mem, ngpus, other = 1, None, 0, []
        for field in fields:
            name, equals, value = field.partition("=")
            if not equals or not name or not value:
                raise PbsValueError(f"Illegal attribute or resource value: select={text}")
            if name == "ncpus":
                ncpus = _count(value, "ncpus")
            elif name == "mem":
                mem = size_mib(value)
            elif name == "ngpus":
                ngpus = int(value) if value.isascii() and value.isdigit() else _count(value, "ngpus")
            elif name in ("mpiprocs", "ompthreads"):
                _count(value, name)  # how the job starts its processes, not what it holds
            else:
                other.append((name, value))
        chunks.append(Chunk(count, ncpus, mem, ngpus, tuple(other)))
    return chunks


def nodes(text: str) -> list[Chunk]:
    """Torque's `nodes={N|host}[:ppn=C][:gpus=G][:property...][+...]`. A host name or a node
    property is kept in `other` as ("host", NAME) or ("property", NAME)."""
    chunks = []
    for part in text.split("+"):
        fields = part.split(":")
        count, other = 1, []
        first = fields.pop(0)
        if first.isascii() and first.isdigit():
            count = _count(first, "nodes")
        elif first:
            other.append(("host", first))
        else:
            raise PbsValueError(f"Illegal attribute or resource value: nodes={text}")
        ppn, gpus = 1, 0
        for field in fields:
            name, equals, value = field.partition("=")
            if name == "ppn" and equals:
                ppn = _count(value, "ppn")
            elif name == "gpus" and equals:
                gpus = _count(value, "gpus")
            elif not equals and name:
                other.append(("property", name))
            else:
                raise PbsValueError(f"Illegal attribute or resource value: nodes={text}")
        chunks.append(Chunk(count, ppn, None, gpus, tuple(other)))
    return chunks


def array_range(text: str, option: str = "-J") -> tuple[int, int, int]:
    """PBS Pro's -J `X-Y[:Z]`: first, last, step. PBS Pro refuses a single index and X >= Y."""
    match = re.fullmatch(r"([0-9]+)-([0-9]+)(?::([0-9]+))?", text.strip())
    if match is None:
        raise PbsValueError("illegal -J value")
    first, last, step = int(match.group(1)), int(match.group(2)), int(match.group(3) or 1)
    if first >= last or step < 1:
        raise PbsValueError("illegal -J value")
    return first, last, step


def torque_array(text: str) -> tuple[str, int | None]:
    """Torque's -t `ID-ID,ID...[%SLOTS]`: Drover's array indices ("1-3,7") and the most that run
    at once."""
    body, percent, slots = text.strip().partition("%")
    items = body.split(",")
    if not body or not all(re.fullmatch(r"[0-9]+(-[0-9]+)?", item) for item in items):
        raise PbsValueError("illegal -t value")
    for item in items:
        low, _, high = item.partition("-")
        if high and int(high) < int(low):
            raise PbsValueError("illegal -t value")
    if percent and not (slots.isascii() and slots.isdigit() and int(slots) > 0):
        raise PbsValueError("illegal -t value")
    return body, int(slots) if percent else None


# qsub(1B) -W depend=: the kinds Drover keeps, and what each is called in Drover.
DEPEND_KINDS = {"afterok": "afterok", "afternotok": "afternotok", "afterany": "afterany", "after": "after"}


@dataclass(frozen=True)
class Dependency:
    kind: str  # Drover's name
    job: int
    task: int | None = None  # a subjob `12[3]`


_JOB_ID = re.compile(r"([0-9]+)(?:\[([0-9]*)\])?(?:\.[^:]*)?")


def depend(text: str) -> list[Dependency]:
    """`type:jobid[:jobid...][,type:jobid...]`: before*, on: and syncwith: are refused."""
    found = []
    for item in text.split(","):
        kind, _, ids = item.partition(":")
        if kind not in DEPEND_KINDS:
            if kind in ("before", "beforeok", "beforenotok", "beforeany", "on", "synccount", "syncwith"):
                raise PbsValueError(f"depend={kind}: Drover has no {kind} dependencies (a job waits on "
                                    "jobs already submitted: after, afterok, afternotok, afterany)")
            raise PbsValueError("illegal -W value")
        if not ids:
            raise PbsValueError("illegal -W value")
        for job_id in ids.split(":"):
            match = _JOB_ID.fullmatch(job_id)
            if match is None:
                raise PbsValueError("illegal -W value")
            task = int(match.group(2)) if match.group(2) else None
            found.append(Dependency(DEPEND_KINDS[kind], int(match.group(1)), task))
    return found


_DATE = re.compile(r"(?:(?:(?:(\d\d)?(\d\d))?(\d\d))?(\d\d))?(\d\d)(\d\d)(?:\.(\d\d))?")


def date_time(text: str, now: float) -> float:
    """-a `[[[[CC]YY]MM]DD]hhmm[.SS]`: the next such moment. A time of day already past today is
    tomorrow's, as PBS takes it; a day already past this month, next month's."""
    match = _DATE.fullmatch(text.strip())
    if match is None:
        raise PbsValueError("illegal -a value")
    century, year, month, day, hour, minute, second = match.groups()
    current = datetime.fromtimestamp(now)
    try:
        moment = datetime(int((century or str(current.year)[:2]) + year) if year else current.year,
                          int(month) if month else current.month, int(day) if day else current.day,
                          int(hour), int(minute), int(second or 0))
    except ValueError:
        raise PbsValueError("illegal -a value") from None
    if moment < current:
        if day is None:
            moment += timedelta(days=1)
        elif month is None:
            moment = moment.replace(month=moment.month % 12 + 1, year=moment.year + (moment.month == 12))
    return moment.timestamp()
