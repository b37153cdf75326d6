"""Slurm's spellings of times, durations, sizes and host lists, as src/common/parse_time.c,
slurm_protocol_api.c (convert_num_unit) and hostlist.c spell them."""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Iterator

import pytest

from drover.compat.slurm import timefmt
from drover.compat.slurm.hostlist import compress_hosts, expand
from drover.compat.slurm.units import KILO, MEGA, NONE, convert
from drover.core.errors import BadRequest


@pytest.fixture(autouse=True)
def utc() -> Iterator[None]:
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if saved is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = saved
    time.tzset()


def test_durations_in_squeue_and_sacct_spellings() -> None:
    assert [timefmt.secs(s) for s in (0, 65, 3600, 90061)] == ["0:00", "1:05", "1:00:00", "1-01:01:01"]
    assert timefmt.secs(-1) == "INVALID"
    assert [timefmt.hms(s) for s in (0, 65, 90061)] == ["00:00:00", "00:01:05", "1-01:01:01"]
    assert [timefmt.hms_fraction(s) for s in (0, 1.5, 61.75, 3600.2, 90061)] == [
        "00:00:00", "00:01.500", "01:01.750", "01:00:00", "1-01:01:01"]
    assert timefmt.mins(None) == "UNLIMITED" and timefmt.mins(90) == "01:30:00"


def test_dates_follow_slurm_time_format() -> None:
    stamp = 1_700_000_000.0
    assert timefmt.date(stamp, {}) == "2023-11-14T22:13:20"
    assert timefmt.date(None, {}) == "Unknown"
    assert timefmt.date(stamp, {"SLURM_TIME_FORMAT": "standard"}) == "2023-11-14T22:13:20"
    assert timefmt.date(stamp, {"SLURM_TIME_FORMAT": "%s"}) == "1700000000"
    assert timefmt.date(stamp, {"SLURM_TIME_FORMAT": "relative"}, now=stamp + 60) == "22:13:20"
    assert timefmt.date(stamp, {"SLURM_TIME_FORMAT": "relative"}, now=stamp + 86400) == "Ystday 22:13"
    assert timefmt.date(stamp, {"SLURM_TIME_FORMAT": "no percent"}) == "2023-11-14T22:13:20"


def test_the_time_forms_sacct_reads() -> None:
    now = dt.datetime(2026, 3, 10, 15, 30, 0).timestamp()
    at = lambda *fields: dt.datetime(*fields).timestamp()  # noqa: E731
    assert timefmt.parse("now", now) == now
    assert timefmt.parse("now-2days", now) == now - 2 * 86400
    assert timefmt.parse("now+1hour", now) == now + 3600
    assert timefmt.parse("now-30", now) == now - 30
    assert timefmt.parse("2026-01-31T10:00", now) == at(2026, 1, 31, 10, 0)
    assert timefmt.parse("2026-01-31T10:00:05", now) == at(2026, 1, 31, 10, 0, 5)
    assert timefmt.parse("2026-01-31", now) == at(2026, 1, 31)
    assert timefmt.parse("midnight", now) == at(2026, 3, 10)
    assert timefmt.parse("today", now) == at(2026, 3, 10)
    assert timefmt.parse("noon", now) == at(2026, 3, 10, 12)
    assert timefmt.parse("16:00", now) == at(2026, 3, 10, 16)  # a time of day: today's, looking back
    assert timefmt.parse("4:00pm", now) == at(2026, 3, 10, 16)
    assert timefmt.parse("031026", now) == at(2026, 3, 10)  # MMDDYY
    assert timefmt.parse("12/24", now) == at(2025, 12, 24)  # no year: the last such day
    assert timefmt.parse("02.28.25", now) == at(2025, 2, 28)
    for bad in ("yesterday-ish", "now-2fortnights", "2026-13-01", "25:00"):
        with pytest.raises(timefmt.BadTime):
            timefmt.parse(bad, now)


def test_sizes_convert_as_slurm_does() -> None:
    assert convert(4460544, NONE) == "4356K"  # exact: stops where precision would be lost
    assert convert(2.5 * 1024 ** 3, NONE) == "2.50G"  # half values are precise enough, as Slurm says
    assert convert(3 * 1024 ** 3, NONE) == "3G"
    assert convert(4096, MEGA) == "4G" and convert(1000, MEGA) == "1000M" and convert(0, MEGA) == "0"
    assert convert(4096, MEGA, keep=True) == "4096M"
    assert convert(4096, MEGA, target="K") == "4194304K"
    assert convert(1536, KILO, target="M") == "1.50M"


def test_host_lists() -> None:
    assert expand("n[1-3,5],gpu07") == ["n1", "n2", "n3", "n5", "gpu07"]
    assert expand("n[01-03]") == ["n01", "n02", "n03"]
    assert expand("r[1-2]n[1-2]") == ["r1n1", "r1n2", "r2n1", "r2n2"]
    assert expand("n[1-2]-ib") == ["n1-ib", "n2-ib"]
    for bad in ("n[1-3", "n1]", "n[a-b]"):
        with pytest.raises(BadRequest):
            expand(bad)
    assert compress_hosts(["n1", "n2", "n3", "n5", "m"]) == "n[1-3,5],m"
    assert compress_hosts(["n01", "n02"]) == "n[01-02]"
    assert compress_hosts(["vm"]) == "vm"
    assert compress_hosts(["node2", "node1"]) == "node2,node1"  # a master-first list keeps its order
    assert compress_hosts(["n3", "n1", "n2"]) == "n3,n[1-2]"
