"""Sparklines and the figures `drover top` and `drover show` print."""

from __future__ import annotations

from drover.cli.usage_render import cpu_against, memory_against, sparkline


def test_sparklines_scale_to_the_largest_value_or_the_reservation() -> None:
    assert sparkline([0, 1, 2, 4, 8]) == "▁▂▃▄█"[:1] + sparkline([1, 2, 4, 8], top=8)
    assert sparkline([2.0, 2.0], top=2.0) == "██" and sparkline([1.0, 1.0], top=2.0) == "▅▅"
    assert sparkline([0, 0]) == "▁▁" and sparkline([]) == ""
    assert len(sparkline(list(range(100)), width=40)) == 40


def test_figures_against_what_was_reserved() -> None:
    assert cpu_against(1.94, 2) == "1.9/2"
    assert memory_against(150 << 20, 256) == "150.0M/256.0M" and memory_against(3 << 20, 0) == "3.0M"
