"""Accounting summaries on plain data: nearest-rank percentiles, the groups and their figures,
days in local time, the times `drover history` takes, and which ended attempts never ran."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import datetime

import pytest

from drover.core.accounting import (
    AccountingFacts,
    GroupSummary,
    never_ran,
    parse_when,
    percentile,
    summarise,
)


def facts(job_id: int, owner: str = "alice", queue: str = "default", node: str = "n1", ended_at: float = 0.0,
          wait_s: float | None = 10.0, wall_s: float = 100.0, cpus: int = 1, cpu_s: float | None = 50.0,
          peak_bytes: int | None = 512 << 20, memory_mib: int = 1024) -> AccountingFacts:
    return AccountingFacts(job_id, owner, queue, node, ended_at, wait_s, wall_s, cpus, cpu_s, peak_bytes, memory_mib)


@pytest.fixture
def in_tokyo() -> Iterator[None]:
    """Local time 9 hours ahead of UTC, whatever the machine's."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Tokyo"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def test_percentiles_are_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([7.0], 50) == percentile([7.0], 90) == 7.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.0  # the 2nd of 4
    assert percentile([4.0, 1.0, 3.0, 2.0], 90) == 4.0  # ceil(3.6) = the 4th
    values = [float(n) for n in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 90), percentile(values, 100)) == (50.0, 90.0, 100.0)
    assert percentile([5.0, 5.0, 1.0], 50) == 5.0


def test_groups_count_jobs_and_attempts_and_sum_hours() -> None:
    records = [
        facts(1, cpu_s=1800.0, wall_s=3600.0, wait_s=60.0),
        facts(1, cpu_s=1800.0, wall_s=3600.0, wait_s=0.0),  # the same job's second attempt
        facts(2, owner="bob", cpu_s=7200.0, wall_s=3600.0, cpus=2, wait_s=None, memory_mib=0),
        facts(3, cpu_s=None, peak_bytes=None, wall_s=0.0, wait_s=300.0),
    ]
    alice, bob = summarise(records, "user")
    assert alice == GroupSummary("alice", jobs=2, attempts=3, cpu_hours=1.0, wall_hours=2.0, wait_p50_s=60.0,
                                 wait_p90_s=300.0, cpu_efficiency_p50=0.5, memory_efficiency_p50=0.5)
    # bob: never waited (no start recorded), used both CPUs, asked for no memory
    assert bob == GroupSummary("bob", jobs=1, attempts=1, cpu_hours=2.0, wall_hours=1.0, wait_p50_s=None,
                               wait_p90_s=None, cpu_efficiency_p50=1.0, memory_efficiency_p50=None)


def test_a_peak_of_0_is_not_known_and_in_no_memory_efficiency() -> None:
    """0: no cgroup measured the attempt and its max RSS was not the job's own (accounting.md)."""
    records = [facts(1), facts(2, peak_bytes=0), facts(3, peak_bytes=0)]
    assert records[1].memory_efficiency is None
    (alice,) = summarise(records, "user")
    assert alice.memory_efficiency_p50 == 0.5  # the one known; not the 0s' median


def test_groups_by_queue_and_node_are_in_key_order() -> None:
    records = [facts(1, queue="q2", node="b"), facts(2, queue="default", node="a"), facts(3, queue="q2", node="a")]
    assert [(g.key, g.attempts) for g in summarise(records, "queue")] == [("default", 1), ("q2", 2)]
    assert [(g.key, g.attempts) for g in summarise(records, "node")] == [("a", 2), ("b", 1)]
    with pytest.raises(ValueError, match="cannot group by 'owner'"):
        summarise(records, "owner")


def test_days_are_local_calendar_days(in_tokyo: None) -> None:
    late_utc = datetime.fromisoformat("2026-11-01T20:00:00+00:00").timestamp()  # 05:00 on the 2nd in Tokyo
    early_utc = datetime.fromisoformat("2026-11-01T10:00:00+00:00").timestamp()  # 19:00 on the 1st in Tokyo
    groups = summarise([facts(1, ended_at=late_utc), facts(2, ended_at=early_utc), facts(3, ended_at=early_utc)],
                       "day")
    assert [(g.key, g.jobs) for g in groups] == [("2026-11-01", 2), ("2026-11-02", 1)]


def test_history_times(in_tokyo: None) -> None:
    now = datetime.fromisoformat("2026-11-25T15:30:00+09:00").timestamp()
    midnight = datetime.fromisoformat("2026-11-25T00:00:00+09:00").timestamp()
    assert parse_when("today", now) == midnight
    assert parse_when("yesterday", now) == midnight - 86400
    assert parse_when("now", now) == now
    assert parse_when("-7d", now) == now - 7 * 86400
    assert parse_when("-2h", now) == now - 7200
    assert parse_when("-3", now) == now - 3 * 86400  # days when no unit is given
    assert parse_when("2026-11-01", now) == datetime.fromisoformat("2026-11-01T00:00:00+09:00").timestamp()
    assert parse_when("2026-11-01T12:30", now) == datetime.fromisoformat("2026-11-01T12:30:00+09:00").timestamp()
    assert parse_when("1790000000", now) == 1790000000.0
    for bad in ("", "last week", "-7y", "2026-13-01", "12345"):
        with pytest.raises(ValueError, match="is not a time"):
            parse_when(bad, now)


def test_an_attempt_stopped_before_its_job_started_with_nothing_wrong_never_ran() -> None:
    assert never_ran(None, None, None, None)  # a promise taken back, a cancel before the shepherd began
    assert never_ran(None, None, None, "")  # an empty failure says nothing went wrong
    assert not never_ran(None, None, None, "no such directory: /scratch")  # a launch failure
    assert not never_ran(12.5, None, None, None)  # started: the job ran, whatever it exited with
    assert not never_ran(None, 0, None, None)  # an exit code is the job's own
    assert not never_ran(None, None, 9, None)  # so is a signal
