"""Reservation against use on the node: the decisions on plain data (samples, reservation,
settings, nice → actions), what each setting turns on, and the node's side on real processes:
renicing only ever raises a nice, a kill over memory leaves the record that makes the attempt's
end OUT_OF_MEMORY, and the job's error file gets its line from a process of the owner's."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.attempt_config import attempt_config
from tests.helpers.wait import wait_until

from drover.execd import attempt_records, enforcement
from drover.execd.enforcement import (
    CPU_WINDOW,
    MAX_NICE,
    RENICE_STEP,
    Action,
    Done,
    Enforcer,
    Policy,
    Settings,
    decide,
    policy_for,
    record,
)
from drover.execd.output_note import append
from drover.protocol.node_channel import Enforced, Sample
from drover.records import ContainmentRecord
from drover.spool import layout
from drover.spool.atomic import write_json

MIB = 1 << 20
CPU = Policy(cpus=1, memory_mib=0, cpu=True, memory=False, hard=False)
MEMORY = Policy(cpus=1, memory_mib=100, cpu=False, memory=True, hard=False)
HARD = Policy(cpus=1, memory_mib=100, cpu=False, memory=True, hard=True, memory_hard_factor=1.5)


def sample(at: float, cpu: float = 0.0, memory_mib: float = 0.0) -> Sample:
    memory = int(memory_mib * MIB)
    return Sample(attempt="1.0.1", at=at, memory_bytes=memory, rss_bytes=memory, peak_bytes=memory, cpu=cpu,
                  cpu_average=cpu, memory_average_bytes=memory, processes=1, threads=1)


def run(samples: list[Sample], policy: Policy, nice: int | None, done: Done) -> list[Action]:
    actions = decide(samples, policy, nice, done)
    record(done, actions, samples[-1].at)
    return actions


# -- the decisions -------------------------------------------------------------------------------


def test_cpu_over_the_reservation_for_the_whole_window_is_reniced_once_per_escalation() -> None:
    done = Done()
    samples = [sample(n, cpu=2.0) for n in range(CPU_WINDOW - 1)]
    assert decide(samples, CPU, 0, done) == []  # not yet a habit
    samples.append(sample(CPU_WINDOW - 1, cpu=2.0))
    (action,) = run(samples, CPU, 0, done)
    assert action.action == "reniced" and action.reason == "cpu" and action.nice_to == RENICE_STEP
    assert action.detail == {"cpu": 2.0, "cpus": 1, "limit": 1.25, "nice_from": 0, "nice_to": RENICE_STEP}
    # The next round: the window holds samples from before the renice, so nothing yet.
    samples.append(sample(CPU_WINDOW, cpu=2.0))
    assert run(samples, CPU, RENICE_STEP, done) == []
    samples += [sample(CPU_WINDOW + n, cpu=2.0) for n in (1, 2)]
    (again,) = run(samples, CPU, RENICE_STEP, done)
    assert again.detail["nice_from"] == RENICE_STEP and again.nice_to == 2 * RENICE_STEP


def test_cpu_within_the_tolerance_or_a_short_burst_is_left_alone() -> None:
    assert decide([sample(n, cpu=1.2) for n in range(5)], CPU, 0, Done()) == []  # 1.2 < 1 × 1.25
    assert decide([sample(0, cpu=3.0), sample(1, cpu=0.1), sample(2, cpu=0.1)], CPU, 0, Done()) == []  # a mean of 1.07
    assert decide([sample(n, cpu=1.3) for n in range(3)], CPU, 0, Done())  # 1.3 > 1.25


def test_the_nice_value_is_never_lowered_and_stops_at_19() -> None:
    over = [sample(n, cpu=3.0) for n in range(CPU_WINDOW)]
    (action,) = decide(over, CPU, 17, Done())
    assert action.nice_to == MAX_NICE
    assert decide(over, CPU, MAX_NICE, Done()) == []  # nothing lower is left to give it
    assert decide(over, CPU, None, Done()) == []  # no process could be read


def test_memory_over_the_request_is_warned_and_reniced_once() -> None:
    done = Done()
    assert run([sample(0, memory_mib=90)], MEMORY, 0, done) == []
    warning, reniced = run([sample(0, memory_mib=90), sample(1, memory_mib=150)], MEMORY, 0, done)
    assert warning.action == "memory_warning" and warning.detail == {"memory_mib": 150.0, "requested_mib": 100}
    assert reniced.action == "reniced" and reniced.reason == "memory" and reniced.nice_to == RENICE_STEP
    assert reniced.detail["nice_from"] == 0 and reniced.detail["memory_mib"] == 150.0
    assert run([sample(2, memory_mib=160)], MEMORY, RENICE_STEP, done) == []  # said once


def test_the_hard_limit_ends_the_attempt_over_request_times_factor() -> None:
    done = Done()
    actions = run([sample(0, memory_mib=120)], HARD, 0, done)
    assert [a.action for a in actions] == ["memory_warning", "reniced"]  # over the request, under 150
    (kill,) = run([sample(1, memory_mib=151)], HARD, RENICE_STEP, done)
    assert kill.action == "killed_over_memory"
    assert kill.detail == {"memory_mib": 151.0, "requested_mib": 100, "limit_mib": 150.0}
    assert done.killed and run([sample(2, memory_mib=200)], HARD, RENICE_STEP, done) == []


def test_a_kill_comes_before_anything_else_due_in_the_same_round() -> None:
    both = Policy(cpus=1, memory_mib=100, cpu=True, memory=True, hard=True, memory_hard_factor=1.0)
    samples = [sample(n, cpu=3.0, memory_mib=101) for n in range(CPU_WINDOW)]
    assert [a.action for a in decide(samples, both, 0, Done())] == ["killed_over_memory"]


def test_memory_and_cpu_due_together_renice_once() -> None:
    both = Policy(cpus=1, memory_mib=100, cpu=True, memory=True, hard=False)
    samples = [sample(n, cpu=3.0, memory_mib=200) for n in range(CPU_WINDOW)]
    assert [(a.action, a.reason) for a in decide(samples, both, 0, Done())] == [
        ("memory_warning", "memory"), ("reniced", "memory")]


@pytest.mark.parametrize(("node", "queue", "limited", "on"), [
    ("auto", None, False, True), ("auto", None, True, False), ("on", None, True, True), ("off", None, False, False),
    ("off", "on", True, True), ("on", "off", False, False), ("auto", "auto", True, False),
])
def test_what_each_setting_turns_on(node: str, queue: str | None, limited: bool, on: bool) -> None:
    settings = Settings(enforce_cpu=node, enforce_memory=node)  # type: ignore[arg-type]
    policy = policy_for(settings, 2, 100, queue, queue, limited, limited)
    assert policy.cpu is on and policy.memory is on
    assert policy.hard is (on and not limited)  # never where a cgroup limit acts on memory


def test_no_memory_request_or_no_hard_factor_turns_the_memory_checks_down() -> None:
    assert not policy_for(Settings(enforce_memory="on"), 1, 0, None, None, False, False).memory
    policy = policy_for(Settings(enforce_memory="on", memory_hard_factor=0), 1, 100, None, None, False, False)
    assert policy.memory and not policy.hard


def test_an_attempt_without_cgroups_has_no_limit_acting() -> None:
    assert enforcement.limits({"backend": "subreaper", "cgroups": {}, "shepherd": 1, "session": 1}) == (False, False)
    assert enforcement.limits(None) == (False, False)


# -- the node's side, on real processes --------------------------------------------------------


def nice_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as file:
        return int(file.read().rsplit(")", 1)[1].split()[16])  # field 19 of the whole line


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", "import threading, time\n"
                                "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
                                "time.sleep(60)"])
    wait_until(lambda: len(os.listdir(f"/proc/{process.pid}/task")) >= 2, describe="its second thread")
    yield process
    process.kill()
    process.wait()


def test_renice_raises_every_thread_and_never_lowers_one(sleeper: subprocess.Popen[bytes]) -> None:
    threads = [int(t) for t in os.listdir(f"/proc/{sleeper.pid}/task")]
    assert len(threads) == 2
    assert enforcement.renice([sleeper.pid], 7) == 2
    assert nice_of(sleeper.pid) == 7 and all(os.getpriority(os.PRIO_PROCESS, t) == 7 for t in threads)
    assert enforcement.lowest_nice([sleeper.pid]) == 7
    assert enforcement.renice([sleeper.pid], 3) == 0 and nice_of(sleeper.pid) == 7
    assert enforcement.renice([999_999_999], 10) == 0  # gone: nothing to do


def spool_with(tmp_path: Path, stderr: str | None, memory_mib: int = 100, **order: object) -> layout.SpoolDir:
    spool = layout.SpoolDir(str(tmp_path / "spool"), "1.0.1")
    os.makedirs(spool.path)
    config: dict[str, Any] = dict(attempt_config(str(tmp_path / "spool"), "1.0.1", cpus=1, memory_mib=memory_mib,
                                                 stdout=str(tmp_path / "out"), stderr=stderr, workdir=str(tmp_path)))
    config.update(order)  # the queue's keys, which the order has only when the queue sets them
    write_json(spool.record(layout.CONFIG), config)
    return spool


SUBREAPER: ContainmentRecord = {"backend": "subreaper", "cgroups": {}, "shepherd": 1, "session": 1}


def checked(enforcer: Enforcer, spool: layout.SpoolDir, samples: list[Sample], pids: list[int]) -> list[Action]:
    return enforcer.check(spool, SUBREAPER, samples, pids)


def test_a_kill_over_memory_leaves_the_record_that_ends_it_out_of_memory(
        tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    sent: list[Any] = []
    spool = spool_with(tmp_path, None)
    enforcer = Enforcer(Settings(enforce_memory="auto"), sent.append)
    (action,) = checked(enforcer, spool, [sample(0, memory_mib=160)], [sleeper.pid])
    assert action.action == "killed_over_memory"  # over 1.5 × its request, the default hard factor
    assert sleeper.wait(timeout=5) == -9
    assert sent == [Enforced("1.0.1", "killed_over_memory",
                             {"memory_mib": 160.0, "requested_mib": 100, "limit_mib": 150.0, "reason": "memory"})]
    # The shepherd records the job's end as it saw it (SIGKILL); the node reads it as OUT_OF_MEMORY.
    write_json(spool.record(layout.EXIT_STATUS), {"exit_code": None, "signal": 9, "failure": None,
                                                  "timed_out": False, "terminated": False, "out_of_memory": False})
    assert attempt_records.exit_status(spool)["out_of_memory"] is True
    assert checked(enforcer, spool, [sample(1, memory_mib=160)], [sleeper.pid]) == []  # once


def test_an_attempt_whose_queue_turns_the_checks_off_is_left_alone(
        tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    spool = spool_with(tmp_path, None, enforce_memory="off", enforce_cpu="off")
    enforcer = Enforcer(Settings(enforce_cpu="on", enforce_memory="on"), lambda _: None)
    samples = [sample(n, cpu=4.0, memory_mib=500) for n in range(CPU_WINDOW)]
    assert checked(enforcer, spool, samples, [sleeper.pid]) == []
    assert sleeper.poll() is None and nice_of(sleeper.pid) == 0


def test_a_memory_warning_renices_and_writes_a_line_in_the_error_file(
        tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    error = tmp_path / "job.err"
    error.write_text("the job's own line\n")
    spool = spool_with(tmp_path, str(error))
    sent: list[Any] = []

    async def main() -> list[Action]:
        enforcer = Enforcer(Settings(enforce_memory="on", memory_hard_factor=2.0), sent.append)
        actions = checked(enforcer, spool, [sample(0, memory_mib=150)], [sleeper.pid])
        await asyncio.gather(*enforcer._tasks)
        return actions

    actions = asyncio.run(main())
    assert [a.action for a in actions] == ["memory_warning", "reniced"]
    assert nice_of(sleeper.pid) == RENICE_STEP
    assert [m.action for m in sent] == ["memory_warning", "reniced"]
    assert sent[1].detail["nice_from"] == 0 and sent[1].detail["nice_to"] == RENICE_STEP
    assert sent[1].detail["changed"] == 2  # both threads
    lines = error.read_text().splitlines()
    assert lines[0] == "the job's own line"
    assert lines[1] == "drover: warning: it uses 150.0 MiB of memory, more than the 100 MiB it requested"


# -- the owner's note writer --------------------------------------------------------------------


def test_the_note_writer_appends_to_a_regular_file_only(tmp_path: Path) -> None:
    target = tmp_path / "err"
    target.write_text("a\n")
    assert append(str(target), "b\nc") == {"ok": True}
    assert target.read_text() == "a\nb c\n"  # one line, whatever it was given
    assert "error" in append("relative/err", "x")
    assert "error" in append(str(tmp_path / "missing"), "x") and not (tmp_path / "missing").exists()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    os.chmod(fifo, stat.S_IRUSR | stat.S_IWUSR)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader: the open does not fail with ENXIO
    try:
        assert append(str(fifo), "x") == {"error": f"{fifo} is not a regular file"}
    finally:
        os.close(reader)


def test_the_note_writer_speaks_one_json_line_each_way(tmp_path: Path) -> None:
    target = tmp_path / "err"
    target.write_text("")
    source = Path(enforcement.__file__).with_name("output_note.py").read_text()
    request = json.dumps({"path": str(target), "line": "hello"}) + "\nnot json\n"
    result = subprocess.run([sys.executable, "-I", "-c", source], input=request, capture_output=True, text=True,
                            cwd="/", env={"PATH": "/usr/bin:/bin"}, timeout=10)
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert first == {"ok": True} and "bad request" in second["error"]
    assert target.read_text() == "hello\n"
