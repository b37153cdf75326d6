"""Begin times (sbatch --begin, qsub -a) on plain data: each format, and bad input refused clearly."""

from __future__ import annotations

from datetime import datetime

import pytest

from drover.core.begin_time import parse_begin, parse_sge_time
from drover.core.errors import BadRequest

NOW = datetime(2026, 3, 10, 14, 30, 0).timestamp()  # a Tuesday afternoon, local time


def at(*fields: int) -> float:
    return datetime(*fields).timestamp()  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "expected"), [
    ("now", NOW), ("now+2", NOW + 2), ("now+90seconds", NOW + 90), ("now+5minutes", NOW + 300),
    ("now+1hour", NOW + 3600), ("now+2days", NOW + 2 * 86400), ("now+1week", NOW + 7 * 86400),
    ("16:00", at(2026, 3, 10, 16, 0)), ("16:00:30", at(2026, 3, 10, 16, 0, 30)),
    ("09:15", at(2026, 3, 11, 9, 15)),  # already past today: tomorrow's
    ("4:00pm", at(2026, 3, 10, 16, 0)), ("2026-04-01", at(2026, 4, 1)),
    ("2026-04-01T08:05", at(2026, 4, 1, 8, 5)), ("2026-04-01T08:05:09", at(2026, 4, 1, 8, 5, 9)),
    ("04/01", at(2026, 4, 1)), ("04/01/27", at(2027, 4, 1)),
    ("midnight", at(2026, 3, 11)), ("noon", at(2026, 3, 11, 12)), ("teatime", at(2026, 3, 10, 16)),
    ("today", at(2026, 3, 10)), ("tomorrow", at(2026, 3, 11)), ("NOW+1MINUTE", NOW + 60),
])
def test_slurm_begin_formats(text: str, expected: float) -> None:
    assert parse_begin(text, NOW) == expected


@pytest.mark.parametrize(("text", "words"), [
    ("soon", "not a time"), ("now+3fortnights", "unknown unit"), ("25:00", "hour must be"),
    ("2026-13-01", "month must be"), ("now-5", "not a time"), ("", "not a time"),
])
def test_bad_begin_times_are_refused_with_the_option_named(text: str, words: str) -> None:
    with pytest.raises(BadRequest, match=f"--begin.*{words}"):
        parse_begin(text, NOW)


@pytest.mark.parametrize(("text", "expected"), [
    ("04011230", at(2026, 4, 1, 12, 30)), ("04011230.45", at(2026, 4, 1, 12, 30, 45)),
    ("2704011230", at(2027, 4, 1, 12, 30)), ("202704011230", at(2027, 4, 1, 12, 30)),
])
def test_grid_engine_date_time(text: str, expected: float) -> None:
    assert parse_sge_time(text, NOW) == expected


@pytest.mark.parametrize("text", ["tomorrow", "0401", "13011230", "040112301"])
def test_bad_grid_engine_date_times_are_refused(text: str) -> None:
    with pytest.raises(BadRequest, match="-a"):
        parse_sge_time(text, NOW)
