"""Queue windows ("nights", "Mon-Fri 18:00-08:00; Sat,Sun"): each form, bad input refused, and
next_open/next_close on the local wall clock, across daylight saving changes too."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drover.core.queue_windows import Window, parse_window


@pytest.fixture(params=["UTC", "Europe/Berlin"])
def zone(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    yield from _in_zone(request.param, monkeypatch)


@pytest.fixture
def berlin(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    yield from _in_zone("Europe/Berlin", monkeypatch)


def _in_zone(name: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("TZ", name)
    time.tzset()
    try:
        yield name
    finally:
        monkeypatch.undo()
        time.tzset()


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0, fold: int = 0) -> float:
    return datetime(year, month, day, hour, minute, fold=fold).timestamp()  # local time


# 2026-03-09 is a Monday; 2026-03-13 a Friday, 2026-03-14/15 the weekend.

@pytest.mark.parametrize(("text", "open_at", "closed_at"), [
    ("always", [(2026, 3, 9, 0, 0), (2026, 3, 15, 23, 59)], []),
    ("nights", [(2026, 3, 9, 18, 0), (2026, 3, 10, 7, 59), (2026, 3, 14, 2, 0)],
     [(2026, 3, 9, 8, 0), (2026, 3, 9, 17, 59)]),
    ("weekends", [(2026, 3, 14, 0, 0), (2026, 3, 15, 23, 59)], [(2026, 3, 13, 23, 59), (2026, 3, 16, 0, 0)]),
    ("weekdays", [(2026, 3, 9, 0, 0), (2026, 3, 13, 23, 59)], [(2026, 3, 14, 0, 0)]),
    ("weekdays nights", [(2026, 3, 13, 23, 0), (2026, 3, 14, 7, 0)], [(2026, 3, 14, 23, 0), (2026, 3, 9, 7, 0)]),
    ("Mon-Fri 18:00-08:00; Sat,Sun", [(2026, 3, 9, 18, 0), (2026, 3, 14, 12, 0), (2026, 3, 10, 7, 59)],
     [(2026, 3, 9, 12, 0), (2026, 3, 16, 7, 59)]),  # Sunday's whole day ends at Monday 00:00
    ("Sat-Sun 00:00-24:00", [(2026, 3, 14, 0, 0), (2026, 3, 15, 23, 59)], [(2026, 3, 16, 0, 0)]),
    ("Fri-Mon", [(2026, 3, 13, 0, 0), (2026, 3, 16, 23, 59)], [(2026, 3, 17, 0, 0), (2026, 3, 12, 23, 59)]),
    ("saturday,SUNDAY 10:00-10:00", [(2026, 3, 14, 0, 0), (2026, 3, 15, 23, 59)],  # equal ends: all day
     [(2026, 3, 13, 23, 59), (2026, 3, 16, 0, 0)]),
    ("Sun 22:00-02:00", [(2026, 3, 15, 23, 0), (2026, 3, 16, 1, 59)], [(2026, 3, 16, 22, 0), (2026, 3, 9, 2, 0)]),
    ("09:00-17:00", [(2026, 3, 14, 9, 0)], [(2026, 3, 14, 17, 0), (2026, 3, 14, 8, 59)]),
    ("Mon 9:00 - 10:30 ;  tue , wed", [(2026, 3, 9, 10, 29), (2026, 3, 11, 12, 0)], [(2026, 3, 9, 10, 30)]),
])
def test_forms(zone: str, text: str, open_at: list[tuple[int, ...]], closed_at: list[tuple[int, ...]]) -> None:
    window = parse_window(text)
    assert window.text == text.strip()
    assert all(window.is_open(at(*moment)) for moment in open_at)
    assert not any(window.is_open(at(*moment)) for moment in closed_at)


@pytest.mark.parametrize(("text", "moment", "opens", "closes"), [
    ("nights", (2026, 3, 9, 12, 0), (2026, 3, 9, 18, 0), (2026, 3, 10, 8, 0)),
    ("nights", (2026, 3, 9, 20, 0), (2026, 3, 9, 20, 0), (2026, 3, 10, 8, 0)),
    ("Mon-Fri 18:00-08:00; Sat,Sun", (2026, 3, 13, 19, 0), (2026, 3, 13, 19, 0), (2026, 3, 16, 0, 0)),
    ("Mon-Fri 18:00-08:00; Sat,Sun", (2026, 3, 16, 7, 0), (2026, 3, 16, 18, 0), (2026, 3, 17, 8, 0)),
    ("weekends", (2026, 3, 10, 9, 0), (2026, 3, 14, 0, 0), (2026, 3, 16, 0, 0)),
    ("Sun 22:00-02:00", (2026, 3, 16, 3, 0), (2026, 3, 22, 22, 0), (2026, 3, 23, 2, 0)),
])
def test_next_open_and_close(zone: str, text: str, moment: tuple[int, ...], opens: tuple[int, ...],
                             closes: tuple[int, ...]) -> None:
    window = parse_window(text)
    assert window.next_open(at(*moment)) == at(*opens)
    assert window.next_close(at(*moment)) == at(*closes)


def test_always_never_closes(zone: str) -> None:
    assert parse_window("always").next_close(at(2026, 3, 9)) is None
    assert parse_window("Mon-Sun").next_close(at(2026, 3, 9)) is None
    assert parse_window("Mon-Fri; weekends").next_open(at(2026, 3, 9, 3, 0)) == at(2026, 3, 9, 3, 0)


def test_dst_start_keeps_the_wall_clock_time(berlin: str) -> None:
    # Clocks go from 02:00 CET to 03:00 CEST on Sunday 2026-03-29: 23 hours from Saturday 09:00.
    window = parse_window("Sun 09:00-10:00")
    opens = window.next_open(at(2026, 3, 28, 9, 0))
    assert opens == at(2026, 3, 29, 9, 0) and opens - at(2026, 3, 28, 9, 0) == 23 * 3600
    assert time.localtime(opens)[3:5] == (9, 0)
    assert parse_window("nights").next_open(at(2026, 3, 29, 10, 0)) == at(2026, 3, 29, 18, 0)


def test_a_span_the_clock_skips_into_opens_when_the_clock_lands(berlin: str) -> None:
    window = parse_window("Sun 02:30-04:00")
    assert window.next_open(at(2026, 3, 29, 0, 0)) == at(2026, 3, 29, 3, 0)
    assert window.next_close(at(2026, 3, 29, 0, 0)) == at(2026, 3, 29, 4, 0)
    # Wholly skipped that night: open the next Sunday.
    assert parse_window("Sun 02:15-02:45").next_open(at(2026, 3, 29, 0, 0)) == at(2026, 4, 5, 2, 15)


def test_a_span_the_clock_repeats_opens_twice(berlin: str) -> None:
    # Clocks go from 03:00 CEST back to 02:00 CET on Sunday 2026-10-25.
    window = parse_window("Sun 02:15-02:45")
    first, second = at(2026, 10, 25, 2, 15), at(2026, 10, 25, 2, 15, fold=1)
    assert second - first == 3600
    assert window.next_open(at(2026, 10, 25, 0, 0)) == first
    assert window.next_close(first) == at(2026, 10, 25, 2, 45)
    assert window.next_open(at(2026, 10, 25, 2, 45)) == second
    assert window.next_close(second) == at(2026, 10, 25, 2, 45, fold=1)


@pytest.mark.parametrize(("text", "words"), [
    ("", "empty; write"), ("  ", "empty; write"),
    ("Mon;", "an empty segment"), ("Mon;;Tue", "an empty segment"),
    ("Mox", "'Mox' is not a day"), ("Mon-Frx", "'Frx' is not a day"), ("Mon Tue", "'Mon Tue' is not a day"),
    ("Mon,,Tue", "a day name is missing"), ("Mon-", "a day name is missing"),
    ("25:00-08:00", "25:00 is not a time of day"), ("Mon 10:61-11:00", "10:61 is not a time of day"),
    ("24:00-08:00", "24:00 can only end a time range"), ("18:00-24:30", "24:30 is not a time of day"),
    ("18:00", "write at most one time range"), ("18:00-08:00 Mon", "write at most one time range"),
    ("Mon 08:00-09:00 10:00-11:00", "write at most one time range"),
    ("always Mon", "'always' stands alone"), ("weekends,always", "'always' stands alone"),
])
def test_bad_windows_are_refused(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=f"window {text!r}: .*{words}"):
        parse_window(text)


def test_window_text_parses() -> None:
    assert Window("nights") == parse_window(" nights ")


# Properties: random windows at random moments, including around both of Berlin's 2026 changes.

DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun", "monday", "SATURDAY")
clocks = st.builds(lambda hour, minute: f"{hour:02d}:{minute:02d}", st.integers(0, 23),
                   st.sampled_from((0, 1, 15, 30, 45, 59)))
day_items = st.one_of(st.sampled_from(DAY_NAMES + ("weekdays", "weekends")),
                      st.builds(lambda a, b: f"{a}-{b}", st.sampled_from(DAY_NAMES), st.sampled_from(DAY_NAMES)))
days_parts = st.lists(day_items, min_size=1, max_size=3).map(",".join)
time_parts = st.one_of(st.just("nights"), st.builds(lambda a, b: f"{a}-{b}", clocks, st.one_of(clocks, st.just("24:00"))))
segments = st.one_of(days_parts, time_parts, st.builds(lambda d, t: f"{d} {t}", days_parts, time_parts))
windows = st.lists(segments, min_size=1, max_size=3).map("; ".join)
CHANGES = (datetime(2026, 3, 29, 1, 0).timestamp(), datetime(2026, 10, 25, 1, 0).timestamp())  # naive UTC
moments = st.one_of(
    st.integers(int(datetime(2026, 1, 1).timestamp()), int(datetime(2027, 1, 1).timestamp())),
    st.builds(lambda change, shift: int(change) + shift, st.sampled_from(CHANGES), st.integers(-8 * 86400, 8 * 86400)),
)
QUARTER = 900


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=windows, moment=moments)
def test_next_open_is_the_first_open_moment(zone: str, text: str, moment: int) -> None:
    window = parse_window(text)
    opens = window.next_open(moment)
    assert opens >= moment and window.is_open(opens)
    if opens > moment:
        assert not window.is_open(opens - 1)
        assert not any(window.is_open(point) for point in range(moment, int(opens), QUARTER))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=windows, moment=moments)
def test_next_close_ends_the_opening_under_way_or_next(zone: str, text: str, moment: int) -> None:
    window = parse_window(text)
    closes = window.next_close(moment)
    if closes is None:
        assert window.is_open(moment) and window.next_close(moment + 86400 * 3) is None
        return
    opens = window.next_open(moment)
    assert closes > opens and not window.is_open(closes) and window.is_open(closes - 1)
    assert all(window.is_open(point) for point in range(int(opens), int(closes), QUARTER))
    if not window.is_open(moment):
        assert closes == window.next_close(opens)
