"""docs/metrics.md's table of every metric is generated from the metrics' definitions and is
current; the Grafana dashboard beside it queries only metrics the controller writes."""

from __future__ import annotations

import json
import pathlib
import re

from tests.helpers.scripts import script_module

from drover.controller.reads.metrics import HISTOGRAM, METRICS

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_the_table_of_metrics_is_generated_from_their_definitions() -> None:
    document = (ROOT / "docs" / "metrics.md").read_text()
    assert script_module("metrics_docs").generated(document) == document, (
        "docs/metrics.md is out of date: run .venv/bin/python scripts/metrics_docs.py")
    for metric in METRICS:
        assert f"| `{metric.sample_name}`" in document


def test_the_names_follow_prometheus_conventions() -> None:
    for metric in METRICS:
        assert re.fullmatch(r"drover_[a-z0-9_]+", metric.name), metric.name
        assert not metric.name.endswith("_total"), f"{metric.name}: a counter's _total is added when written"
        if metric.unit:
            assert metric.name.endswith(f"_{metric.unit}"), metric.name
        assert not re.search(r"_(ms|milliseconds|mib|kib|kb|mb)(_|$)", metric.name), f"{metric.name}: base units"


def test_the_dashboard_queries_only_metrics_the_controller_writes() -> None:
    dashboard = json.loads((ROOT / "docs" / "grafana" / "drover.json").read_text())
    written = set()
    for metric in METRICS:
        written.add(metric.sample_name)
        if metric.kind == HISTOGRAM:
            written |= {f"{metric.name}_bucket", f"{metric.name}_sum", f"{metric.name}_count"}
    queried = {name for panel in dashboard["panels"] for target in panel["targets"]
               for name in re.findall(r"\bdrover_[a-z0-9_]+", target["expr"])}
    assert queried and queried <= written, queried - written
    titles = " ".join(panel["title"].lower() for panel in dashboard["panels"])
    for wanted in ("jobs by state", "by reason", "cpus allocated per node", "pass duration", "commit latency"):
        assert wanted in titles
