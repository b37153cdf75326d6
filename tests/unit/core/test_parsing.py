"""What users type: memory, time, arrays, job ids, file patterns."""

from __future__ import annotations

import pytest

from drover.core.arrays import TaskIndices
from drover.core.errors import BadRequest
from drover.core.ids import parse_job_ref
from drover.core.patterns import check_pattern, expand
from drover.core.units import (
    MAX_ARRAY_TASKS,
    format_duration,
    parse_array,
    parse_duration_s,
    parse_memory_mib,
)


@pytest.mark.parametrize(("text", "mib"), [
    ("512", 512), ("512M", 512), ("512m", 512), ("4G", 4096), ("1.5G", 1536), ("2T", 2 * 1024 * 1024),
    ("100K", 1), ("1024K", 1), ("4GB", 4096), ("4GiB", 4096), ("0", 0), ("0.5M", 1),
])
def test_memory_amounts(text: str, mib: int) -> None:
    assert parse_memory_mib(text) == mib


@pytest.mark.parametrize("text", ["", "abc", "-1G", "4X", "nan", "inf", "G", "4 G B"])
def test_bad_memory_amounts_are_refused_naming_the_text(text: str) -> None:
    with pytest.raises(BadRequest, match="bad memory amount"):
        parse_memory_mib(text)


@pytest.mark.parametrize(("text", "seconds"), [
    ("10", 600), ("10:30", 630), ("1:02:03", 3723), ("2-0", 172800), ("1-2", 93600),
    ("1-2:03", 93780), ("1-02:03:04", 93784), ("90s", 90), ("10m", 600), ("2h", 7200), ("1d", 86400),
    ("1.5h", 5400), ("0:30", 30),
])
def test_time_limits_in_slurm_formats_and_with_units(text: str, seconds: int) -> None:
    assert parse_duration_s(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "1:xx", "1:2:3:4", "-5", "1-", "x-1", "10q", "1h30m"])
def test_bad_times_are_refused(text: str) -> None:
    with pytest.raises(BadRequest, match="bad time"):
        parse_duration_s(text)


def test_durations_format_like_slurm() -> None:
    assert format_duration(5) == "00:05"
    assert format_duration(3723) == "01:02:03"
    assert format_duration(93784) == "1-02:03:04"
    assert format_duration(None) == "-"


@pytest.mark.parametrize(("text", "ranges", "limit"), [
    ("1-10", ((1, 10, 1),), None),
    ("1-10:2", ((1, 9, 2),), None),
    ("1,3,5-7", ((1, 1, 1), (3, 3, 1), (5, 7, 1)), None),
    ("1-100%5", ((1, 100, 1),), 5),
    ("0", ((0, 0, 1),), None),
])
def test_arrays(text: str, ranges: tuple[tuple[int, int, int], ...], limit: int | None) -> None:
    assert parse_array(text) == (ranges, limit)


@pytest.mark.parametrize("text", ["10-1", "1-10%0", "a-b", "1-5,3", "1-10:0", "", "1-10%x", f"1-{MAX_ARRAY_TASKS + 1}"])
def test_bad_arrays_are_refused(text: str) -> None:
    with pytest.raises(BadRequest, match="bad array"):
        parse_array(text)


def test_task_indices_over_several_ranges() -> None:
    indices = TaskIndices(((10, 12, 1), (1, 5, 2)))
    assert indices.count == 6
    assert list(indices) == [1, 3, 5, 10, 11, 12]
    assert [indices.at(p) for p in range(6)] == [1, 3, 5, 10, 11, 12]
    assert [indices.position(i) for i in (1, 3, 5, 10, 11, 12)] == list(range(6))
    assert indices.slice(2, 3) == [5, 10, 11]
    assert indices.slice(5, 10) == [12]
    assert 3 in indices and 4 not in indices and 11 in indices
    assert indices.describe() == "1-5:2,10-12"
    with pytest.raises(IndexError):
        indices.at(6)


def test_a_huge_array_is_sliced_without_listing_it() -> None:
    indices = TaskIndices(((1, 100_000_000, 1),))
    assert indices.slice(99_999_998, 5) == [99_999_999, 100_000_000]
    assert indices.position(50_000_000) == 49_999_999


@pytest.mark.parametrize(("text", "ref"), [("12", (12, None)), ("12.3", (12, 3)), ("12_3", (12, 3)), ("12[3]", (12, 3)), (" 7 ", (7, None))])
def test_job_references(text: str, ref: tuple[int, int | None]) -> None:
    assert parse_job_ref(text) == ref


@pytest.mark.parametrize("text", ["abc", "0", "-1", "1.x", "", "1.2.3"])
def test_bad_job_references(text: str) -> None:
    with pytest.raises(BadRequest, match="not a job id"):
        parse_job_ref(text)


def test_output_patterns_expand_and_unknown_placeholders_are_refused() -> None:
    assert expand("%x-%j_%a.%u.out", job_id=12, index=3, name="n", user="u") == "n-12_3.u.out"
    assert expand("100%%-%A", job_id=5, index=0, name="n", user="u") == "100%-5"
    check_pattern("plain.out")
    with pytest.raises(BadRequest, match="unknown placeholder %q"):
        check_pattern("out-%q")
    with pytest.raises(BadRequest, match="unknown placeholder"):
        check_pattern("trailing%")


def test_long_numbers_are_read_exactly_never_as_an_infinite_float() -> None:
    """A float would be infinity past 1e308 (and int(inf) a traceback); the amounts are exact, so
    the caller's bounds can say what is wrong."""
    huge = "1" + "0" * 400
    assert parse_memory_mib(huge + "G") == 10**400 * 1024
    assert parse_memory_mib(huge + "K") == -(-(10**400) // 1024)
    assert parse_duration_s(huge + "s") == 10**400
    assert parse_duration_s(huge + ".5m") == 10**400 * 60 + 30
    assert parse_memory_mib("0.0001M") == 1
