"""A parallel task's start order (StartPeTask) is placed as a start order is: a CPU the node does
not offer (its hello's count), or one named twice, and the shepherd could not pin the task and
would run it on every CPU. On the job's master host a task runs within its attempt: on the
attempt's CPUs (those it moved to, where it started in place) and as its owner; and everywhere
its config must be of the attempt the order names. A node that came back offering fewer CPUs
runs tasks on those its attempts hold there by its own record, and on no others. A controller taken over may send any of
these (docs/security.md); an honest one sends none (controller/nodes/pe_tasks.py, task_order).
Each is refused before anything of it is made, and reported as the task's end; the good orders
that follow run, on real shepherds."""

from __future__ import annotations

import asyncio
import json
import os
import pwd
from pathlib import Path
from typing import Any

import msgspec
import pytest
from tests.helpers.attempt_config import NODE_OPTIONS, attempt_config
from tests.helpers.spools import make_spool
from tests.unit.execd.test_node_promises import Spawner, spawner, until  # noqa: F401  (a fixture)

from drover.execd import attempt_records
from drover.execd.identities import Identities
from drover.execd.pe_tasks import PeTasks
from drover.protocol.node_channel import PeTaskExited, StartPeTask, controller_decoder
from drover.spool import layout

MASTER, ELSEWHERE = "7.0.1", "8.0.1"  # an attempt whose master runs on this node; one whose does not


def task_order(work: Path, name: str, petask: str, cpu_ids: str, owner: str, **changed: Any) -> StartPeTask:
    """The order of task `petask` of attempt `name` that a frame with these CPU ids decodes to, as
    the node's channel decodes it; `changed`: its config's keys, as a controller taken over sets them."""
    config = {**attempt_config(str(work), name, owner=owner, pe_task=petask), "cpu_ids": "CPUS", **changed}
    frame = json.dumps([{"type": "start_pe_task", "attempt": name, "petask": petask, "config": config,
                         "script": f"#!/bin/bash\nexec touch {work / f'{name}-{petask}.ran'}\n"}])
    (order,) = controller_decoder.decode(frame.replace('"CPUS"', cpu_ids).encode())
    assert isinstance(order, StartPeTask)
    return order


def failures(sent: list[Any]) -> list[str]:
    assert all(isinstance(message, PeTaskExited) and message.usage is None for message in sent)
    return [message.exit_status["failure"] for message in sent]


def test_task_orders_off_the_nodes_or_the_attempts_cpus_start_nothing_and_are_reported(
        tmp_path: Path, spawner: Spawner) -> None:  # noqa: F811
    root, work = tmp_path / "spool", tmp_path / "work"
    root.mkdir()
    work.mkdir()
    me = pwd.getpwuid(os.geteuid()).pw_name
    # The master's own attempt on this node, on CPU 1 of two.
    make_spool(root, "sleep 60\n", name=MASTER, cpu_ids=[1], owner=me)
    before = sorted(os.listdir(root))

    async def scenario() -> None:
        sent: list[Any] = []
        tasks = PeTasks(str(root), spawner, sent.append, NODE_OPTIONS, Identities(), None, cpus=2)  # type: ignore[arg-type]
        try:
            # On a host of the job's other than its master's: CPUs the node does not offer.
            for cpu_ids in ["[2]", "[0, 2]", "[65536]", "[" + "9" * 1000 + "]", "[-1]", "[1, 1]"]:
                tasks.start(task_order(work, ELSEWHERE, "1", cpu_ids, me))
            refused = failures(sent)
            assert len(refused) == 6 and all(why.startswith("the node refused the task's CPUs: ") for why in refused)
            assert refused[0].endswith("CPU 2 is not one this node offers (it offers CPUs 0 to 1)")
            assert refused[-1].endswith("CPU 1 is named twice")
            # A config of another attempt than the order's directory (a signature binds the job).
            sent.clear()
            tasks.start(task_order(work, ELSEWHERE, "1", "[0]", me, attempt="5.0.1", job_id=5))
            tasks.start(task_order(work, ELSEWHERE, "1", "[0]", me, job_id=5))
            assert failures(sent) == ["the order is for attempt 8.0.1, and its config for 5.0.1 (5.0.1)",
                                      "the order is for attempt 8.0.1, and its config for 8.0.1 (5.0.1)"]
            # On the master's host: a CPU the node offers, not the attempt's; another user's task.
            sent.clear()
            tasks.start(task_order(work, MASTER, "1", "[0]", me))
            tasks.start(task_order(work, MASTER, "1", "[0, 1]", me))
            tasks.start(task_order(work, MASTER, "1", "[1]", "nobody"))
            assert failures(sent) == [
                "the node refused the task's CPUs: CPU 0 is not the attempt's (it holds CPU 1)",
                "the node refused the task's CPUs: CPU 0 is not the attempt's (it holds CPU 1)",
                f"the task is nobody's, and its attempt {me}'s"]
            assert sorted(os.listdir(root)) == before  # no directory made for the other attempt's tasks
            assert not any(os.path.isdir(root / MASTER / name) for name in os.listdir(root / MASTER))
            assert spawner.started == [] and not tasks.live

            # The good orders run: on the attempt's CPU, on the master's host; on the job's room
            # elsewhere; and, once the attempt moved to CPU 0 (started in place), on CPU 0.
            sent.clear()
            tasks.start(task_order(work, MASTER, "1", "[1]", me))
            tasks.start(task_order(work, ELSEWHERE, "1", "[0]", me))
            (root / MASTER / layout.MOVED).write_text("[0]")
            tasks.start(task_order(work, MASTER, "2", "[1]", me))  # no longer the attempt's CPU
            tasks.start(task_order(work, MASTER, "3", "[0]", me))
            await until(lambda: len(sent) == 4)
            ended = {(message.attempt, message.petask): message.exit_status for message in sent}
            assert ended[MASTER, "2"]["failure"] == (
                "the node refused the task's CPUs: CPU 1 is not the attempt's (it holds CPU 0)")
            for started in [(MASTER, "1"), (ELSEWHERE, "1"), (MASTER, "3")]:
                assert ended[started]["exit_code"] == 0, ended[started]
                assert (work / f"{started[0]}-{started[1]}.ran").exists()
            assert sorted(spawner.started) == ["1", "1", "3"]
        finally:
            tasks.close()

    asyncio.run(scenario())


def test_a_node_back_with_fewer_cpus_runs_tasks_on_those_its_attempts_hold_there_and_no_others(
        tmp_path: Path, spawner: Spawner) -> None:  # noqa: F811
    """The node offered four CPUs; it came back offering two, and keeps running the attempts that
    started on CPUs 2 and 3 (controller/handlers/node_reports.py), whose tasks the controller
    orders on the same CPUs. On the master's host the attempt's spool says they are its own; on
    another host of the job's, the task this node started there on CPU 3 before. A CPU of no
    record beyond the node's two is refused as before, and so is one the attempt does not hold."""
    root, work = tmp_path / "spool", tmp_path / "work"
    root.mkdir()
    work.mkdir()
    me = pwd.getpwuid(os.geteuid()).pw_name
    make_spool(root, "sleep 60\n", name=MASTER, cpu_ids=[2, 3], owner=me)

    async def scenario() -> None:
        sent: list[Any] = []
        before = PeTasks(str(root), spawner, sent.append, NODE_OPTIONS, Identities(), None, cpus=4)  # type: ignore[arg-type]
        try:
            before.start(task_order(work, ELSEWHERE, "1", "[3]", me))  # the job's room on this host: CPU 3
            await until(lambda: len(sent) == 1)
        finally:
            before.close()
        assert sent[0].exit_status["exit_code"] == 0
        sent.clear()
        tasks = PeTasks(str(root), spawner, sent.append, NODE_OPTIONS, Identities(), None, cpus=2)  # type: ignore[arg-type]
        try:
            tasks.start(task_order(work, MASTER, "1", "[4]", me))
            tasks.start(task_order(work, MASTER, "2", "[1, 3]", me))
            tasks.start(task_order(work, MASTER, "3", "[3, 3]", me))
            tasks.start(task_order(work, ELSEWHERE, "2", "[2]", me))  # no task of the attempt was there
            tasks.start(task_order(work, ELSEWHERE, "3", "[3, 3]", me))
            assert failures(sent) == [
                "the node refused the task's CPUs: CPU 4 is not one this node offers (it offers CPUs 0 to 1)",
                "the node refused the task's CPUs: CPU 1 is not the attempt's (it holds CPUs 2, 3)",
                "the node refused the task's CPUs: CPU 3 is not one this node offers (it offers CPUs 0 to 1)",
                "the node refused the task's CPUs: CPU 2 is not one this node offers (it offers CPUs 0 to 1)",
                "the node refused the task's CPUs: CPU 3 is not one this node offers (it offers CPUs 0 to 1)"]
            sent.clear()
            tasks.start(task_order(work, MASTER, "4", "[3]", me))
            tasks.start(task_order(work, MASTER, "5", "[2, 3]", me))
            tasks.start(task_order(work, ELSEWHERE, "4", "[3]", me))
            tasks.start(task_order(work, ELSEWHERE, "5", "[0, 3]", me))  # the node's CPU 0, and the share's
            await until(lambda: len(sent) == 4)
            ended = {(message.attempt, message.petask): message.exit_status for message in sent}
            for started in [(MASTER, "4"), (MASTER, "5"), (ELSEWHERE, "4"), (ELSEWHERE, "5")]:
                assert ended[started]["exit_code"] == 0, ended[started]
                assert (work / f"{started[0]}-{started[1]}.ran").exists()
        finally:
            tasks.close()

    asyncio.run(scenario())


def test_a_refusal_says_at_most_80_characters_of_what_the_order_named(tmp_path: Path,
                                                                      spawner: Spawner) -> None:  # noqa: F811
    root, work = tmp_path / "spool", tmp_path / "work"
    root.mkdir()
    work.mkdir()
    me = pwd.getpwuid(os.geteuid()).pw_name
    make_spool(root, "sleep 60\n", name=MASTER, cpu_ids=[1], owner=me)

    async def scenario() -> None:
        sent: list[Any] = []
        tasks = PeTasks(str(root), spawner, sent.append, NODE_OPTIONS, Identities(), None, cpus=2)  # type: ignore[arg-type]
        try:
            tasks.start(task_order(work, ELSEWHERE, "1", "[0]", me, attempt="5.0." + "1" * 100_000,
                                   job_id=int("9" * 4000)))
            tasks.start(task_order(work, MASTER, "1", "[1]", "x" * 100_000))
            (other_attempt, other_owner) = failures(sent)
            assert other_attempt == (f"the order is for attempt {ELSEWHERE}, and its config for "
                                     f"{('5.0.' + '1' * 100)[:80]} ({'9' * 80})")
            assert other_owner == f"the task is {'x' * 80}'s, and its attempt {me}'s"
            assert spawner.started == []
        finally:
            tasks.close()

    asyncio.run(scenario())


def test_the_spawners_clean_up_ends_a_task_left_running_and_removes_its_cgroups(
        tmp_path: Path, spawner: Spawner) -> None:  # noqa: F811
    """A test that ends with a task still running leaves nothing of it: the spawner's clean-up
    ends the task's cgroups, named <attempt>.<petask> (pe_tasks._end_contained), not <petask>."""
    root, work = tmp_path / "spool", tmp_path / "work"
    root.mkdir()
    work.mkdir()
    me = pwd.getpwuid(os.geteuid()).pw_name
    task = layout.SpoolDir(str(root / ELSEWHERE), "1")

    async def scenario() -> None:
        sent: list[Any] = []
        tasks = PeTasks(str(root), spawner, sent.append, NODE_OPTIONS, Identities(), None, cpus=2)  # type: ignore[arg-type]
        try:
            order = task_order(work, ELSEWHERE, "1", "[0]", me)
            tasks.start(msgspec.structs.replace(order, script="#!/bin/bash\nexec sleep 600\n"))
            await until(lambda: attempt_records.containment(task) is not None
                        and os.path.exists(task.record(layout.JOB_PID)))
            assert sent == []
        finally:
            tasks.close()

    asyncio.run(scenario())
    record = attempt_records.containment(task)
    assert record is not None
    job_pid = int((Path(task.record(layout.JOB_PID))).read_text().split()[0])
    cgroups = [path for path in record["cgroups"].values() if os.path.basename(path) == f"{ELSEWHERE}.1"]
    assert cgroups or record["backend"] == "subreaper"  # the task's own (a CPU slot's is shared: not its to remove)
    assert all(os.path.isdir(path) for path in cgroups)
    spawner.stop()
    assert not any(os.path.exists(path) for path in cgroups), (record["backend"], cgroups)
    with pytest.raises(ProcessLookupError):
        os.kill(job_pid, 0)
