"""Tables and times for people; imported only when a person reads the output."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from drover.core.units import format_duration, format_memory_kib

# A table is plain text: columns two spaces apart, each as wide as its widest cell (in terminal
# cells: East Asian wide characters take two), the header in bold on a terminal. Drawing it is a
# few string operations; the rich library did the same in ~50 ms of import on every listing
# (`drover status` cold: 90 ms, of which rich was more than half).
GAP = "  "
BOLD, PLAIN = "\x1b[1m", "\x1b[0m"


def table(columns: Sequence[str], rows: Sequence[Sequence[object]], right: Sequence[str] = ()) -> None:
    cells = [list(columns)] + [["-" if cell is None else _one_line(str(cell)) for cell in row] for row in rows]
    widths = [max(_width(row[i]) for row in cells) for i in range(len(columns))]
    aligned = [column in right for column in columns]
    lines = [GAP.join(_pad(cell, widths[i], aligned[i]) for i, cell in enumerate(row)) for row in cells]
    if sys.stdout.isatty():
        lines[0] = BOLD + lines[0] + PLAIN
    sys.stdout.write("\n".join(lines) + "\n")


def _one_line(text: str) -> str:
    """A cell is one line: a newline or tab in a job's name would break the columns."""
    return text.replace("\n", " ").replace("\t", " ") if "\n" in text or "\t" in text else text


def _width(text: str) -> int:
    if text.isascii():
        return len(text)
    from unicodedata import combining, east_asian_width

    return sum(0 if combining(char) else 2 if east_asian_width(char) in "WF" else 1 for char in text)


def _pad(text: str, width: int, right: bool) -> str:
    fill = " " * (width - _width(text))
    return fill + text if right else text + fill


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
