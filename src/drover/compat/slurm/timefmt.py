"""Times as Slurm's commands print and read them. Pure, but for the clock and the environment
variable SLURM_TIME_FORMAT, which every Slurm command honours.

Printing (src/common/parse_time.c, slurm_make_time_str): ISO `%Y-%m-%dT%H:%M:%S` in local time,
"Unknown" for no time; SLURM_TIME_FORMAT=standard|relative|<strftime format> changes it.
Durations come in two spellings: squeue's and sinfo's `[D-][H:]MM:SS` (`_print_secs`) and
sacct's always-with-hours `[D-]HH:MM:SS` (`print_fields_time_from_secs`).
Reading (parse_time): `HH:MM[:SS][AM|PM]`, `MMDD[YY]`, `MM/DD[/YY]`, `MM.DD[.YY]`,
`YYYY-MM-DD[THH:MM[:SS]]`, `now[{+|-}N[units]]`, `today`, `midnight`, `noon`, `fika`,
`teatime`, `elevenses`, `tomorrow`.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import time

YEAR_SECONDS = 365 * 24 * 3600


def date(stamp: float | None, environ: dict[str, str] | None = None, now: float | None = None) -> str:
    """A point in time as slurm_make_time_str prints it; "Unknown" when there is none."""
    if not stamp:
        return "Unknown"
    env = os.environ if environ is None else environ
    chosen = env.get("SLURM_TIME_FORMAT", "")
    when = time.localtime(stamp)
    pattern = "%Y-%m-%dT%H:%M:%S"
    if chosen == "relative":
        pattern = _relative(when, time.localtime(time.time() if now is None else now))
    elif chosen and chosen != "standard" and "%" in chosen and len(chosen) < 32:
        pattern = chosen
    return time.strftime(pattern.replace("%-d", str(when.tm_mday)), when)


def _relative(when: time.struct_time, today: time.struct_time) -> str:
    distance = dt.date(when.tm_year, when.tm_mon, when.tm_mday).toordinal() - dt.date(
        today.tm_year, today.tm_mon, today.tm_mday).toordinal()
    if distance == -1:
        return "Ystday %H:%M"
    if distance == 0:
        return "%H:%M:%S"
    if distance == 1:
        return "Tomorr %H:%M"
    if distance < -365 or distance > 365:
        return "%-d %b %Y"
    if distance < -1 or distance > 6:
        return "%-d %b %H:%M"
    return "%a %H:%M"


def secs(seconds: float) -> str:
    """squeue's and sinfo's duration: `M:SS`, `H:MM:SS`, `D-HH:MM:SS` ("INVALID" out of range)."""
    total = int(seconds)
    if total < 0 or total > YEAR_SECONDS:
        return "INVALID"
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, second = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{second:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{second:02d}"
    return f"{minutes}:{second:02d}"


def hms(seconds: float) -> str:
    """sacct's duration: `HH:MM:SS`, `D-HH:MM:SS` with a day or more."""
    total = max(int(seconds), 0)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, second = divmod(rest, 60)
    text = f"{hours:02d}:{minutes:02d}:{second:02d}"
    return f"{days}-{text}" if days else text


def hms_fraction(seconds: float) -> str:
    """sacct's CPU times (TotalCPU, UserCPU, SystemCPU), as `_elapsed_time` in src/sacct/print.c
    spells them: `MM:SS.mmm` under an hour when there are milliseconds, else `00:MM:SS`,
    `HH:MM:SS` or `D-HH:MM:SS`."""
    total_ms = max(int(seconds * 1000), 0)
    whole, millis = divmod(total_ms, 1000)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, second = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{second:02d}"
    if hours:
        return f"{hours:02d}:{minutes:02d}:{second:02d}"
    if millis:
        return f"{minutes:02d}:{second:02d}.{millis:03d}"
    return f"00:{minutes:02d}:{second:02d}"


def mins(minutes: int | None) -> str:
    """A time limit as mins2time_str prints it (sacct Timelimit, scontrol TimeLimit)."""
    if minutes is None:
        return "UNLIMITED"
    return hms(minutes * 60)


_UNITS = {"": 1, "s": 1, "sec": 1, "second": 1, "seconds": 1, "m": 60, "min": 60, "minute": 60, "minutes": 60,
          "h": 3600, "hour": 3600, "hours": 3600, "d": 86400, "day": 86400, "days": 86400,
          "w": 604800, "week": 604800, "weeks": 604800}
_NAMED = {"midnight": (0, 0), "noon": (12, 0), "elevenses": (11, 0), "fika": (15, 0), "teatime": (16, 0)}


class BadTime(ValueError):
    """A time the real command's parse_time would refuse."""


def parse(text: str, now: float | None = None) -> float:
    """A point in time from one of the forms Slurm's parse_time reads, looking into the past as
    sacct asks it to: a time of day with no date is today's, a date with no year the last one."""
    clock = time.time() if now is None else now
    today = dt.datetime.fromtimestamp(clock)
    word = text.strip()
    lower = word.lower()
    relative = re.fullmatch(r"now(?:([+-])(\d+)([a-z]*))?", lower)
    if relative:
        if not relative.group(1):
            return clock
        unit = _UNITS.get(relative.group(3))
        if unit is None:
            raise BadTime(text)
        offset = int(relative.group(2)) * unit
        return clock + offset if relative.group(1) == "+" else clock - offset
    midnight = today.replace(hour=0, minute=0, second=0, microsecond=0)
    if lower == "today":
        return midnight.timestamp()
    if lower == "tomorrow":
        return (midnight + dt.timedelta(days=1)).timestamp()
    if lower in _NAMED:
        hour, minute = _NAMED[lower]
        return today.replace(hour=hour, minute=minute, second=0, microsecond=0).timestamp()
    iso = re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2}))?)?", word)
    if iso:
        year, month, day, hour, minute, second = (int(g) if g else 0 for g in iso.groups())
        return _at(year, month, day, hour, minute, second, text)
    clock_time = re.fullmatch(r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([ap]m)?", lower)
    if clock_time:
        hour, minute, second = int(clock_time.group(1)), int(clock_time.group(2)), int(clock_time.group(3) or 0)
        if clock_time.group(4) == "pm" and hour < 12:
            hour += 12
        if clock_time.group(4) == "am" and hour == 12:
            hour = 0
        if hour > 23 or minute > 59 or second > 59:
            raise BadTime(text)
        return today.replace(hour=hour, minute=minute, second=second, microsecond=0).timestamp()
    day_only = re.fullmatch(r"(\d{2})(\d{2})(\d{2})?|(\d{1,2})([/.])(\d{1,2})(?:\5(\d{2}|\d{4}))?", word)
    if day_only:
        groups = day_only.groups()
        month_text, day_text, year_text = (groups[0], groups[1], groups[2]) if groups[0] else (
            groups[3], groups[5], groups[6])
        full_year = (today.year - (int(month_text) > today.month) if not year_text
                     else int(year_text) + 2000 if len(year_text) == 2 else int(year_text))
        return _at(full_year, int(month_text), int(day_text), 0, 0, 0, text)
    raise BadTime(text)


def _at(year: int, month: int, day: int, hour: int, minute: int, second: int, text: str) -> float:
    try:
        return dt.datetime(year, month, day, hour, minute, second).timestamp()
    except ValueError:
        raise BadTime(text) from None
