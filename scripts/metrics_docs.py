"""Regenerate the table of every metric in docs/metrics.md from their definitions
(src/drover/controller/reads/metrics.py, METRICS): name as a query writes it, type, labels and
meaning.

    python scripts/metrics_docs.py          # rewrite the table in docs/metrics.md
    python scripts/metrics_docs.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from generated import write_or_check  # noqa: E402  # scripts/ is no package

from drover.controller.reads.metrics import HISTOGRAM, METRICS  # noqa: E402

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


def main(argv: list[str]) -> int:
    return write_or_check(argv, DOCUMENT, generated(DOCUMENT.read_text()), ".venv/bin/python scripts/metrics_docs.py")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
