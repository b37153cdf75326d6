"""When a queue may start jobs: weekly calendars such as "nights" or "weekends" (jobd's
run-nights-only queues, Grid Engine's calendar_conf(5)). Pure: moments are passed in, and read in
the machine's local time.

Syntax: one or more segments joined by `;`, the window being open when any segment is. A segment
is `[DAYS] [HH:MM-HH:MM]`, with at least one of the two:
- DAYS is a comma list of day names (`Mon` or `Monday`, any case) or ranges of them (`Mon-Fri`;
  `Fri-Mon` wraps round the weekend); no DAYS means every day;
- HH:MM-HH:MM is a time of day range; `24:00` may end it; equal ends mean the whole day; no range
  means the whole day. A range may cross midnight: the DAYS name the day a span *starts*, so
  `Fri 18:00-08:00` runs from Friday 18:00 to Saturday 08:00.
Shorthands: `always` (a segment on its own), `nights` (= `18:00-08:00`), `weekdays` (= `Mon-Fri`)
and `weekends` (= `Sat,Sun`), which may stand for either part: `weekdays nights`.
Examples: `Mon-Fri 18:00-08:00; Sat,Sun`, `nights`, `Sat-Sun 00:00-24:00`.

Times are wall-clock times: `18:00` is 18:00 on the local clock whatever the UTC offset that day,
so across a daylight saving change a window still opens at the hour written. A span the clock
skips (02:30 on the night clocks go forward) is open from the moment the clock lands inside it.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import date, timedelta

DAY = 1440  # minutes
WEEK = 7 * DAY
DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DAYS = {name: index for index, name in enumerate(DAY_NAMES)} | {
    full: index for index, full in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                              "sunday"))}
_DAY_SHORTHANDS = {"weekdays": (0, 1, 2, 3, 4), "weekends": (5, 6)}
_NIGHTS = (18 * 60, 8 * 60)
_RANGE = re.compile(r"(?:^|\s)(?:(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})|(nights))$", re.IGNORECASE)
_CLOCK = re.compile(r"\d{1,2}:\d{2}")
_SEARCH_DAYS = 8
_SEARCHES = 3
_PROBE = 6 * 3600  # UTC offset changes are looked for this often, then bisected to the second


@dataclass(frozen=True, slots=True)
class Window:
    """A parsed calendar. `Window(text)` parses `text` (raising ValueError when malformed)."""

    text: str
    # Open spans as minutes of the week from Monday 00:00, sorted, disjoint and not touching; a
    # span running past Sunday midnight is split in two.
    _spans: tuple[tuple[int, int], ...] = field(init=False, repr=False, compare=False)
    _starts: tuple[int, ...] = field(init=False, repr=False, compare=False)
    # Minutes of the day at which some span starts or ends, by weekday (Monday 0).
    _edges: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        spans = _merge(_parse(self.text))
        edges: list[set[int]] = [set() for _ in range(7)]
        for start, end in spans:
            for minute in (start, end % WEEK):
                edges[minute // DAY].add(minute % DAY)
        object.__setattr__(self, "text", self.text.strip())
        object.__setattr__(self, "_spans", tuple(spans))
        object.__setattr__(self, "_starts", tuple(start for start, _ in spans))
        object.__setattr__(self, "_edges", tuple(tuple(sorted(day)) for day in edges))

    @property
    def always(self) -> bool:
        """Open every minute of the week (`always`, or segments that cover it all)."""
        return self._spans == ((0, WEEK),)

    def is_open(self, moment: float) -> bool:
        """Whether the window is open at `moment` (Unix time), read on the local clock."""
        local = time.localtime(moment)
        minute = local.tm_wday * DAY + local.tm_hour * 60 + local.tm_min
        index = bisect_right(self._starts, minute) - 1
        return index >= 0 and minute < self._spans[index][1]

    def next_open(self, moment: float) -> float:
        """`moment` itself when the window is open then; else the Unix time it next opens."""
        if self.is_open(moment):
            return moment
        return self._first(moment, want_open=True)

    def next_close(self, moment: float) -> float | None:
        """When the window next closes: the end of the opening under way at `moment`, or of the
        next one when it is closed at `moment`; None when the window is always open."""
        if self.always:
            return None
        return self._first(self.next_open(moment), want_open=False)

    def _first(self, moment: float, want_open: bool) -> float:
        """The earliest instant after `moment` at which is_open() turns `want_open`. The open state
        only changes where the local clock reaches a span's edge or jumps (UTC offset changes), so
        only those instants are tried, 8 days of them at a time: every weekly span recurs within
        that; only one the clock skips makes the next 8 days needed."""
        today = date(*time.localtime(moment)[:3])
        for first_day in range(0, _SEARCH_DAYS * _SEARCHES, _SEARCH_DAYS):
            for candidate in sorted(self._candidates(moment, today, first_day)):
                if candidate > moment and self.is_open(candidate) == want_open:
                    return candidate
        raise ValueError(f"window {self.text!r} never {'opens' if want_open else 'closes'} within "
                         f"{_SEARCH_DAYS * _SEARCHES} days of {moment}")

    def _candidates(self, moment: float, today: date, first_day: int) -> set[float]:
        found: set[float] = set()
        for offset in range(first_day, first_day + _SEARCH_DAYS + 1):
            day = today + timedelta(days=offset)
            for minute in self._edges[day.weekday()]:
                found.update(_instants(day, minute))
        start = max(moment, time.mktime((today + timedelta(days=first_day)).timetuple()) - 86400)
        end = time.mktime((today + timedelta(days=first_day + _SEARCH_DAYS + 1)).timetuple())
        found.update(_offset_changes(start, end))
        return found


def parse_window(text: str) -> Window:
    """Parse a calendar; a malformed one raises ValueError naming the part at fault."""
    return Window(text)


def _instants(day: date, minute: int) -> list[float]:
    """The Unix times at which the local clock reads `minute` on `day`: usually one, two when the
    clock is set back over it, none when it is set forward over it."""
    wanted = (day.year, day.month, day.day, minute // 60, minute % 60)
    found = []
    for dst in (0, 1):
        instant = time.mktime((*wanted, 0, 0, 0, dst))
        if time.localtime(instant)[:5] == wanted:
            found.append(instant)
    return found


def _offset_changes(start: float, end: float) -> list[float]:
    """The first second of each new UTC offset between `start` and `end`."""
    changes = []
    low = int(start)
    offset = time.localtime(low).tm_gmtoff
    while low < end:
        high = min(low + _PROBE, int(end) + 1)
        if time.localtime(high).tm_gmtoff != offset:
            first_after, last_before = high, low
            while first_after - last_before > 1:
                middle = (first_after + last_before) // 2
                if time.localtime(middle).tm_gmtoff == offset:
                    last_before = middle
                else:
                    first_after = middle
            changes.append(float(first_after))
            offset = time.localtime(first_after).tm_gmtoff
            high = first_after
        low = high
    return changes


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans within one week, sorted and joined where they overlap or touch."""
    pieces = []
    for start, end in spans:
        if end > WEEK:  # runs past Sunday midnight: the rest is at the start of the week
            pieces += [(start, WEEK), (0, end - WEEK)]
        else:
            pieces.append((start, end))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(pieces):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _parse(text: str) -> list[tuple[int, int]]:
    if not text.strip():
        raise ValueError(f"window {text!r}: empty; write e.g. 'nights', 'weekends' or 'Mon-Fri 18:00-08:00'")
    spans: list[tuple[int, int]] = []
    for segment in text.split(";"):
        try:
            spans += _segment(segment.strip())
        except ValueError as error:
            raise ValueError(f"window {text!r}: {error}") from None
    return spans


def _segment(segment: str) -> list[tuple[int, int]]:
    if not segment:
        raise ValueError("an empty segment between ';'")
    if segment.lower() == "always":
        return [(0, WEEK)]
    if "always" in re.split(r"[\s,]+", segment.lower()):
        raise ValueError(f"'always' stands alone in its segment (it means every day, all day), in {segment!r}")
    days_text, hours = segment, (0, DAY)
    if match := _RANGE.search(segment):
        days_text = segment[:match.start()].strip()
        hours = _NIGHTS if match[5] else (_clock(match[1], match[2], segment, end=False),
                                          _clock(match[3], match[4], segment, end=True))
    days = _days(days_text) if days_text else tuple(range(7))
    start, end = hours if hours[0] != hours[1] else (0, DAY)  # equal ends: the whole day
    length = end - start if end > start else end + DAY - start
    return [(day * DAY + start, day * DAY + start + length) for day in days]


def _clock(hour_text: str, minute_text: str, segment: str, end: bool) -> int:
    hour, minute = int(hour_text), int(minute_text)
    if hour == 24 and minute == 0:
        if not end:
            raise ValueError(f"24:00 can only end a time range, in {segment!r}")
        return DAY
    if hour > 23 or minute > 59:
        raise ValueError(f"{hour_text}:{minute_text} is not a time of day (00:00 to 24:00), in {segment!r}")
    return hour * 60 + minute


def _days(text: str) -> tuple[int, ...]:
    if _CLOCK.search(text):
        raise ValueError(f"{text!r} is not a list of days: write at most one time range HH:MM-HH:MM, after "
                         "the days, as in 'Mon-Fri 18:00-08:00'")
    days: list[int] = []
    for item in re.sub(r"\s*([,-])\s*", r"\1", text).split(","):
        first, dash, last = item.partition("-")
        if dash:
            start, stop = _day(first), _day(last)
            days += [(start + step) % 7 for step in range((stop - start) % 7 + 1)]
        elif item.lower() in _DAY_SHORTHANDS:
            days += _DAY_SHORTHANDS[item.lower()]
        else:
            days.append(_day(item))
    return tuple(sorted(set(days)))


def _day(name: str) -> int:
    if not name:
        raise ValueError("a day name is missing (a stray ',' or '-'?)")
    if (day := _DAYS.get(name.lower())) is None:
        raise ValueError(f"{name!r} is not a day: use Mon..Sun or Monday..Sunday, ranges such as Mon-Fri, "
                         "'weekdays' or 'weekends'")
    return day
