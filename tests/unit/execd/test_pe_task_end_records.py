"""A parallel job's task's end, as its node reports it (PeTaskExited) from the records its
shepherd left in the task's directory: the exit status, and the usage the shepherd wrote inside
it, reported apart from it; a task whose shepherd, of an earlier Drover, wrote the usage in a
record of its own is reported with that usage."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, cast

import pytest

from drover import eventloop
from drover.execd import pe_tasks
from drover.execd.attempts import Spawner
from drover.execd.identities import Identities
from drover.execd.pe_tasks import PeTasks
from drover.protocol.node_channel import PeTaskExited
from drover.spool import layout
from drover.spool.atomic import write_json

OK = {"exit_code": 0, "signal": None, "failure": None, "timed_out": False, "terminated": False,
      "out_of_memory": False}
USAGE = {"user_cpu_s": 1.5, "sys_cpu_s": 0.25, "max_rss_kib": 2000, "minor_faults": 90, "major_faults": 0,
         "voluntary_switches": 1, "involuntary_switches": 0, "wall_s": 2.0, "started_at": 1.0, "ended_at": 3.0}


def reported_at_start(root: Path) -> list[PeTaskExited]:
    """What a node daemon starting on `root` reports of the tasks that ended while none ran."""
    sent: list[Any] = []

    async def scenario() -> None:
        tasks = PeTasks(str(root), cast(Spawner, None), sent.append, cast(Any, {}), Identities(), None)
        tasks.recover()
        await asyncio.sleep(0)
        tasks.close()

    eventloop.run(scenario())
    return sorted((m for m in sent if isinstance(m, PeTaskExited)), key=lambda m: m.petask)


def task_dir(root: Path, petask: str) -> layout.SpoolDir:
    attempt = root / "7.0.1"
    os.makedirs(attempt / petask)
    return layout.SpoolDir(str(attempt), petask)


def test_a_tasks_usage_comes_out_of_its_exit_record_and_is_reported_apart(tmp_path: Path) -> None:
    write_json(task_dir(tmp_path, "1").record(layout.EXIT_STATUS), {**OK, "usage": USAGE})
    (ended,) = reported_at_start(tmp_path)
    assert (ended.attempt, ended.petask) == ("7.0.1", "1")
    assert ended.exit_status == OK and ended.usage == USAGE


def test_a_task_whose_shepherd_wrote_its_usage_apart_is_reported_with_it(tmp_path: Path) -> None:
    earlier = task_dir(tmp_path, "2")
    write_json(earlier.record(layout.USAGE), USAGE)
    write_json(earlier.record(layout.EXIT_STATUS), {**OK, "exit_code": 4})
    (ended,) = reported_at_start(tmp_path)
    assert ended.exit_status == {**OK, "exit_code": 4} and ended.usage == USAGE


def test_a_node_that_could_not_read_a_directory_of_tasks_names_none_at_its_hello(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hello names the tasks the node knows, and the controller ends, failed, each task sent
    there that it does not name: a node daemon that could not read an attempt's directory of
    tasks when it started (an I/O error) does not know whether they run, so it names none."""
    write_json(task_dir(tmp_path, "1").record(layout.EXIT_STATUS), OK)
    os.makedirs(tmp_path / "8.0.1" / "1")
    scandir = os.scandir

    def failing(path: str) -> Any:
        if os.path.basename(path) == "8.0.1":
            raise OSError(5, "Input/output error")
        return scandir(path)

    known: list[list[str] | None] = []

    async def scenario() -> None:
        tasks = PeTasks(str(tmp_path), cast(Spawner, None), lambda message: None, cast(Any, {}), Identities(), None)
        tasks.recover()
        await asyncio.sleep(0)
        known.append(tasks.known())
        tasks.close()

    eventloop.run(scenario())
    monkeypatch.setattr(pe_tasks.os, "scandir", failing)
    eventloop.run(scenario())
    assert known == [["7.0.1/1", "8.0.1/1"], None]
