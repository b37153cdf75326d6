"""When a job may start at the earliest (sbatch --begin, qsub -a), as a Unix time. Pure: `now` is
passed in; local time, as Slurm and Grid Engine read it."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from drover.core.errors import BadRequest

_UNITS = {"": 1, "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60, "mins": 60,
          "minute": 60, "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400,
          "days": 86400, "w": 604800, "week": 604800, "weeks": 604800}
_NAMED_HOURS = {"midnight": 0, "noon": 12, "elevenses": 11, "fika": 15, "teatime": 16}
_NOW = re.compile(r"now(?:\+(\d{1,9})([a-z]*))?")
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([ap]m)?")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[tT](\d{1,2}):(\d{2})(?::(\d{2}))?)?")
_US_DATE = re.compile(r"(\d{1,2})[/.](\d{1,2})(?:[/.](\d{2}))?")
_SGE = re.compile(r"(\d{2})?(\d{2})?(\d{2})(\d{2})(\d{2})(\d{2})(?:\.(\d{2}))?")

BEGIN_FORMATS = ("HH:MM[:SS][AM|PM], YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY], now[+N[seconds|minutes|hours|days|weeks]], "
                 "midnight, noon, elevenses, fika, teatime, today, tomorrow")


def parse_begin(text: str, now: float, option: str = "--begin") -> float:
    """Slurm's --begin formats (sbatch(1)); a time of day already past means tomorrow's."""
    word = text.strip().lower()
    current = datetime.fromtimestamp(now)
    today = current.replace(hour=0, minute=0, second=0, microsecond=0)
    try:
        if match := _NOW.fullmatch(word):
            unit = match[2] or ""
            if unit not in _UNITS:
                raise ValueError(f"unknown unit {unit!r}")
            return now + int(match[1] or 0) * _UNITS[unit]
        if word == "today":
            return today.timestamp()
        if word == "tomorrow":
            return (today + timedelta(days=1)).timestamp()
        if word in _NAMED_HOURS:
            return _next(today.replace(hour=_NAMED_HOURS[word]), current)
        if match := _CLOCK.fullmatch(word):
            hour = int(match[1]) % 12 + (12 if match[4] == "pm" else 0) if match[4] else int(match[1])
            moment = today.replace(hour=hour, minute=int(match[2]), second=int(match[3] or 0))
            return _next(moment, current)
        if match := _DATE.fullmatch(word):
            return datetime(int(match[1]), int(match[2]), int(match[3]), int(match[4] or 0), int(match[5] or 0),
                            int(match[6] or 0)).timestamp()
        if match := _US_DATE.fullmatch(word):
            year = 2000 + int(match[3]) if match[3] else current.year
            return datetime(year, int(match[1]), int(match[2])).timestamp()
    except ValueError as error:
        raise BadRequest(f"{option} {text!r}: {error}") from None
    raise BadRequest(f"{option}: {text!r} is not a time; use {BEGIN_FORMATS}")


def parse_sge_time(text: str, now: float, option: str = "-a") -> float:
    """Grid Engine's date_time (sge_types(1)): [[CC]YY]MMDDhhmm[.SS]."""
    match = _SGE.fullmatch(text.strip())
    if match is None:
        raise BadRequest(f"{option}: {text!r} is not a date and time of the form [[CC]YY]MMDDhhmm[.SS]")
    century, year, month, day, hour, minute, second = match.groups()
    current = datetime.fromtimestamp(now)
    if year is None and century is not None:  # a two-digit year matched the first group
        century, year = None, century
    full_year = current.year if year is None else int(century or str(current.year)[:2]) * 100 + int(year)
    try:
        return datetime(full_year, int(month), int(day), int(hour), int(minute), int(second or 0)).timestamp()
    except ValueError as error:
        raise BadRequest(f"{option} {text!r}: {error}") from None


def _next(moment: datetime, current: datetime) -> float:
    return (moment if moment >= current else moment + timedelta(days=1)).timestamp()
