"""Tables and times for people; imported only when a person reads the output."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from drover.core.units import format_duration, format_memory_kib


def table(columns: Sequence[str], rows: Sequence[Sequence[object]], right: Sequence[str] = ()) -> None:
    console = Console(file=sys.stdout, highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 200)
    grid = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for column in columns:
        grid.add_column(column, justify="right" if column in right else "left", no_wrap=True)
    for row in rows:
        grid.add_row(*("-" if cell is None else str(cell) for cell in row))
    console.print(grid)


def when(timestamp: float | None) -> str:
    if not timestamp:
        return "-"
    today = time.strftime("%Y-%m-%d")
    stamp = time.localtime(timestamp)
    return time.strftime("%H:%M:%S" if time.strftime("%Y-%m-%d", stamp) == today else "%Y-%m-%d %H:%M", stamp)


def elapsed(start: float | None, end: float | None) -> str:
    if not start:
        return "-"
    return format_duration((end or time.time()) - start)


def seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def memory(kib: int | None) -> str:
    return format_memory_kib(kib)
