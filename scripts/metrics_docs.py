"""Regenerate the table of every metric in docs/metrics.md from their definitions
(src/drover/controller/reads/metrics.py, METRICS): name as a query writes it, type, labels and
meaning.

    python scripts/metrics_docs.py          # rewrite the table in docs/metrics.md
    python scripts/metrics_docs.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import pathlib
import sys

from drover.controller.reads.metrics import HISTOGRAM, METRICS

DOCUMENT = pathlib.Path(__file__).resolve().parent.parent / "docs" / "metrics.md"
BEGIN = "<!-- generated: the metrics (scripts/metrics_docs.py) -->"
END = "<!-- end of generated: the metrics -->"


def table() -> str:
    rows = ["| metric | type | labels | meaning |", "| --- | --- | --- | --- |"]
    for metric in METRICS:
        name = f"`{metric.sample_name}`"
        if metric.kind == HISTOGRAM:
            name += " (`_bucket`, `_sum`, `_count`)"
        labels = ", ".join(f"`{label}`" for label in metric.labels) or "-"
        meaning = metric.help.replace("|", "\\|")
        rows.append(f"| {name} | {metric.kind} | {labels} | {meaning} |")
    return "\n".join(rows)


def generated(document: str) -> str:
    head, begin, rest = document.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"{DOCUMENT} has no {BEGIN!r} ... {END!r} markers")
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main() -> int:
    document = DOCUMENT.read_text()
    fresh = generated(document)
    if "--check" in sys.argv[1:]:
        if fresh != document:
            print(f"{DOCUMENT} is out of date: run .venv/bin/python scripts/metrics_docs.py", file=sys.stderr)
            return 1
        return 0
    DOCUMENT.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
