"""A parallel job's max RSS with its tasks' counted in (controller/handlers/pe_usage.py), where
some are not known: 0, at most the mark each started from (docs/accounting.md, Max RSS). The
figure kept is the max only where it is so, with the mark of the usage it came from."""

from __future__ import annotations

from drover.controller.handlers.pe_usage import fold, uncounted
from drover.records import PeTaskRecord, Usage


def usage(rss_kib: int, mark_kib: int | None) -> Usage:
    made = Usage(user_cpu_s=1.0, sys_cpu_s=0.0, max_rss_kib=rss_kib, minor_faults=0, major_faults=0,
                 voluntary_switches=0, involuntary_switches=0, wall_s=10.0, started_at=1.0, ended_at=11.0)
    if mark_kib is not None:
        made["max_rss_inherited_kib"] = mark_kib
    return made


def max_rss(master: Usage, tasks: Usage) -> tuple[int, int | None]:
    total = fold(master, tasks)
    assert total is not None
    return total["max_rss_kib"], total.get("max_rss_inherited_kib")


def test_the_mark_kept_is_that_of_the_usage_the_max_rss_came_from() -> None:
    # A shell script (not known, under its 17 MiB mark) that starts a task of 90 MiB: the task's.
    assert max_rss(usage(0, 17_000), usage(90_000, 16_000)) == (90_000, 16_000)
    assert max_rss(usage(90_000, 17_000), usage(0, 16_000)) == (90_000, 17_000)
    assert max_rss(usage(0, 17_000), usage(0, 18_000)) == (0, 18_000)  # neither known: at most the larger
    assert max_rss(usage(20_000, None), usage(30_000, None)) == (30_000, None)  # nodes that read no mark


def test_a_known_figure_under_a_mark_not_known_is_no_max() -> None:
    """The task's processes stayed under 18 MiB, but maybe above the master's 17.5 MiB: the max
    is not known, at most 18 MiB."""
    assert max_rss(usage(17_500, 17_000), usage(0, 18_000)) == (0, 18_000)


def test_tasks_ended_after_their_attempt_are_summed_the_same_way() -> None:
    records: list[PeTaskRecord] = [
        {"petask": str(n), "host": "n2", "argv": ["burn"], "started_at": 1.0, "ended_at": 2.0, "exit": None,
         "usage": u, "summed": True, "counted": False}
        for n, u in enumerate([usage(0, 16_000), usage(40_000, 15_000), usage(0, 17_000)], 1)]
    tasks = uncounted(records)
    assert tasks is not None and (tasks["max_rss_kib"], tasks.get("max_rss_inherited_kib")) == (40_000, 15_000)
