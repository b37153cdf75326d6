"""The CPU of an attempt's end records alone, in one process, on tmpfs: the shepherd's writes
(spool/outcome.py `write_outcome`) and the node's reads (execd/attempt_records.py `Ended`: the
exit status and the usage), for the usage inside `exit_status` and for the earlier layout, the
usage in a record of its own, which the node still reads where `exit_status` holds none.

    .venv/bin/python bench/end_records.py --attempts 5000 --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from drover.execd import attempt_records
from drover.spool import layout
from drover.spool.outcome import write_outcome

EXIT = {"exit_code": 0, "signal": None, "failure": None, "timed_out": False, "terminated": False,
        "out_of_memory": False, "methods": []}
USAGE = {"user_cpu_s": 0.001, "sys_cpu_s": 0.001, "max_rss_kib": 1000, "minor_faults": 90, "major_faults": 0,
         "voluntary_switches": 1, "involuntary_switches": 0, "wall_s": 0.01, "started_at": 1.0, "ended_at": 1.01,
         "containment": "cgroup-v1", "cgroup_peak_memory_bytes": 123456, "cgroup_cpu_s": 0.002}


def _json(record: Any) -> bytes:
    return json.dumps(record, separators=(",", ":")).encode()  # as the shepherd writes it


def microseconds_each(action: Callable[[], object], times: int) -> float:
    began = time.process_time()
    for _ in range(times):
        action()
    return (time.process_time() - began) / times * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attempts", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="drvb-end-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    spool = layout.SpoolDir(root, "7.0.1")
    os.mkdir(spool.path)

    def one_record() -> None:
        write_outcome(spool, spool.record(layout.EXIT_STATUS), _json({**EXIT, "usage": USAGE}))

    def two_records() -> None:
        write_outcome(spool, spool.record(layout.USAGE), _json(USAGE))
        write_outcome(spool, spool.record(layout.EXIT_STATUS), _json(EXIT))

    def read() -> None:
        ended = attempt_records.Ended(spool, None)
        assert ended.usage() is not None
        ended.exit_status()

    figures: dict[str, list[float]] = {}
    try:
        for _ in range(args.repeat):
            for layout_name, write in (("usage in exit_status", one_record), ("usage apart", two_records)):
                for name in os.listdir(spool.path):
                    os.unlink(spool.record(name))
                figures.setdefault(f"{layout_name}: the shepherd's writes", []).append(
                    microseconds_each(write, args.attempts))
                figures.setdefault(f"{layout_name}: the node's reads", []).append(
                    microseconds_each(read, args.attempts))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for name, samples in figures.items():
        print(f"{name}: {statistics.median(samples):.1f} µs an attempt [{min(samples):.1f}-{max(samples):.1f}]")


if __name__ == "__main__":
    main()
