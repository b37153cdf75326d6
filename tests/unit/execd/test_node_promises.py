"""A promised attempt on a node (an order with `after`): prepared at once, started the moment the
shepherd of the attempt it follows is gone, without the controller; a stop takes it back before
it starts; and a restarted node daemon finds it promised again in its spool. Told to start in
place (StartPromisedNow), it starts at once on the CPUs it is given, and an order the node cannot
honour (a controller taken over may send any) starts nothing and changes no spool. Real
shepherds run on hand-made spools; the controller is a list of what the node sends."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.attempt_config import NODE_OPTIONS, attempt_config
from tests.helpers.spools import make_spool

from drover.execd import attempts as attempts_module
from drover.execd.attempts import Attempts
from drover.execd.lost_shepherd import end_attempt
from drover.protocol.node_channel import (
    SignalAttempt,
    StartAttempt,
    Started,
    StartPromisedNow,
    controller_decoder,
)
from drover.spool import layout

FIRST, SECOND = "7.0.1", "8.0.1"


class Spawner:
    """Starts each shepherd as the fork server does, as a child of this process."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.spools: list[str] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        self.messages: list[tuple[str, ...]] = []  # what the fork server would get, message by message

    def spawn(self, spool_dir: str, lifeline: int | None = None, released: int | None = None) -> int:
        self.messages.append((*([f"release {released}"] if released is not None else []),
                              f"start {Path(spool_dir).name}"))
        self.started.append(Path(spool_dir).name)
        self.spools.append(spool_dir)
        # The shepherd holds the attempt's lifeline until it exits, as a fork server's one-shot does.
        process = subprocess.Popen([sys.executable, "-m", "drover.shepherd", spool_dir], start_new_session=True,
                                   pass_fds=[lifeline] if lifeline is not None else [])
        self.processes.append(process)
        return process.pid

    def release(self, pid: int) -> None:
        self.messages.append((f"release {pid}",))

    def wait_status(self, pid: int) -> int | None:
        return None

    def stop(self) -> None:
        """End what is left of the shepherds and their jobs, also after a test that failed while a
        job waited at its gate: each job is in a process group of its own, which killing its
        shepherd's does not reach, so every process of each attempt goes as a lost shepherd's
        attempt's does (its cgroups, or its shepherd's session), and its cgroups with them; a
        parallel task's too, whose cgroups are named for its attempt and task."""
        for spool_dir in self.spools:
            path = Path(spool_dir)
            spool = layout.SpoolDir(str(path.parent), path.name)
            if layout.PETASK_ID.fullmatch(path.name):  # a parallel task's: its cgroup is <attempt>.<petask>
                spool.name = f"{path.parent.name}.{path.name}"  # as pe_tasks._end_contained names it
            end_attempt(spool)
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


class Cleanup:
    """What would clean up after each attempt: here, only which attempts reached it."""

    def __init__(self) -> None:
        self.begun: list[str] = []
        self.pending: dict[str, layout.SpoolDir] = {}
        self.rewritten: list[tuple[str, Any]] = []  # configs written again, as handed over

    def begin(self, spool: layout.SpoolDir) -> None:
        self.begun.append(spool.name)

    def made_here(self, name: str, config: Any = None) -> None:
        pass

    def config_rewritten(self, name: str, config: Any) -> None:
        self.rewritten.append((name, config))

    def node_left(self, name: str, why: str) -> None:
        pass

    def known(self) -> list[str]:
        return []

    def remove_leftovers(self) -> None:
        pass


@pytest.fixture
def spawner() -> Iterator[Spawner]:
    made = Spawner()
    yield made
    made.stop()


@dataclass(frozen=True)
class Pair:
    """Two attempts' spools on one CPU: the first runs until `gate` exists; the second, promised
    its room, prints "second" into `second_out`."""

    gate: Path
    first: layout.SpoolDir
    second: layout.SpoolDir
    second_out: Path


@pytest.fixture
def pair(tmp_path: Path) -> Pair:
    """The spools as the node writes them for an order and the promise behind it (the second's
    `after` record names the first)."""
    gate, second_out = tmp_path / "gate", tmp_path / "second.out"
    make_spool(tmp_path, f"while [ ! -e {gate} ]; do sleep 0.02; done\n", name=FIRST, cpu_ids=[0])
    make_spool(tmp_path, "echo second\n", name=SECOND, stdout=str(second_out), cpu_ids=[0])
    second = layout.SpoolDir(str(tmp_path), SECOND)
    Path(second.record(layout.AFTER)).write_text(FIRST)
    return Pair(gate, layout.SpoolDir(str(tmp_path), FIRST), second, second_out)


def hold(attempts: Attempts, pair: Pair) -> None:
    """The first attempt started, the second promised behind it."""
    attempts._start_or_wait(pair.first, None)
    attempts._start_or_wait(pair.second, FIRST)


async def until(condition: Any, timeout: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


def attempts_on(root: Path, spawner: Spawner, cleanup: Cleanup, sent: list[Any], **options: Any) -> Attempts:
    return Attempts(str(root), spawner, sent.append, cleanup, NODE_OPTIONS, **options)  # type: ignore[arg-type]


def second_cpus(pair: Pair) -> Any:
    """The CPUs the second attempt's config gives it."""
    return json.loads(Path(pair.second.record(layout.CONFIG)).read_text())["cpu_ids"]


def test_a_promise_starts_when_the_attempt_it_follows_ends(tmp_path: Path, spawner: Spawner, pair: Pair) -> None:
    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent)
        hold(attempts, pair)
        assert spawner.started == [FIRST] and SECOND in attempts.promised
        assert {known.attempt for known in attempts.known() if known.running} == {FIRST, SECOND}
        # The hello says when the running one started (its Started report may be lost), not the promise.
        await until(lambda: any(isinstance(m, Started) and m.attempt == FIRST for m in sent))
        (said,) = [m.started_at for m in sent if isinstance(m, Started) and m.attempt == FIRST]
        assert {known.attempt: known.started_at for known in attempts.known() if known.running} == {
            FIRST: said, SECOND: None}
        await asyncio.sleep(0.3)
        assert spawner.started == [FIRST]  # waits while the first runs
        pair.gate.touch()
        await until(lambda: SECOND in cleanup.begun)
        assert spawner.started == [FIRST, SECOND] and cleanup.begun == [FIRST, SECOND]
        assert pair.second_out.read_text() == "second\n"
        attempts.close()

    asyncio.run(scenario(spawner))


def test_the_shepherd_of_an_attempt_that_ended_is_released_with_the_order_of_the_promise_behind_it(
        tmp_path: Path, spawner: Spawner, pair: Pair) -> None:
    """The fork server is woken once for both: the release of the shepherd whose attempt ended,
    then the order that takes its room, in that order; an attempt no promise follows is
    released alone."""
    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent)
        hold(attempts, pair)
        first = attempts.live[FIRST].shepherd_pid
        pair.gate.touch()
        await until(lambda: SECOND in cleanup.begun)
        second = spawner.processes[1].pid
        assert spawner.messages == [(f"start {FIRST}",), (f"release {first}", f"start {SECOND}"),
                                    (f"release {second}",)]
        attempts.close()

    asyncio.run(scenario(spawner))


@pytest.mark.parametrize("failing", ["no descriptor for the lifeline", "no room to end an unplaced promise"])
def test_the_shepherd_of_an_attempt_that_ended_is_released_whatever_fails_for_the_promise_behind_it(
        tmp_path: Path, spawner: Spawner, pair: Pair, monkeypatch: pytest.MonkeyPatch, failing: str) -> None:
    """Unreleased, the shepherd would wait idle for good, counted by the fork server as coming
    back (warm_shepherds.py): it is released alone, once, where its order cannot be sent."""
    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent)
        hold(attempts, pair)
        first = attempts.live[FIRST].shepherd_pid
        errors: list[Any] = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: errors.append(context))
        if failing == "no descriptor for the lifeline":
            def pipe2(flags: int) -> tuple[int, int]:
                raise OSError(24, os.strerror(24))
            monkeypatch.setattr(attempts_module.os, "pipe2", pipe2)
        else:
            def write_failure(*args: Any, **kwargs: Any) -> None:
                raise OSError(28, os.strerror(28))
            attempts._unplaced_promises[SECOND] = "a CPU the node no longer offers"
            monkeypatch.setattr(attempts_module, "_write_failure", write_failure)
        pair.gate.touch()
        await until(lambda: FIRST not in attempts.live)
        assert spawner.messages == [(f"start {FIRST}",), (f"release {first}",)]
        monkeypatch.undo()
        attempts.close()

    asyncio.run(scenario(spawner))


def test_a_promise_taken_back_ends_without_starting(tmp_path: Path, spawner: Spawner, pair: Pair) -> None:
    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent)
        hold(attempts, pair)
        attempts.signal(SignalAttempt(SECOND, "suspend"))  # nothing of it runs to suspend
        assert SECOND in attempts.promised and not cleanup.begun
        attempts.signal(SignalAttempt(SECOND, "terminate", "hold"))
        assert SECOND not in attempts.promised and cleanup.begun == [SECOND]
        assert json.loads(Path(pair.second.record(layout.EXIT_STATUS)).read_text())["terminated"] is True
        assert json.loads(Path(pair.second.record(layout.STOP_REQUEST)).read_text()) == {"why": "hold"}
        pair.gate.touch()
        await until(lambda: FIRST in cleanup.begun)
        await asyncio.sleep(0.2)
        assert spawner.started == [FIRST] and not pair.second_out.exists()
        attempts.close()

    asyncio.run(scenario(spawner))


def test_a_restarted_node_finds_its_promises_in_the_spool(tmp_path: Path, spawner: Spawner, pair: Pair) -> None:
    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        before = attempts_on(tmp_path, spawner, cleanup, sent)
        before._start_or_wait(pair.first, None)
        await until(lambda: Path(pair.first.record(layout.PID)).exists())
        before.close()  # the node daemon stops; the first attempt's shepherd goes on
        after = attempts_on(tmp_path, spawner, cleanup, sent)
        after.recover()
        assert FIRST in after.live and SECOND in after.promised and spawner.started == [FIRST]
        pair.gate.touch()
        await until(lambda: SECOND in cleanup.begun)
        assert spawner.started == [FIRST, SECOND]
        after.close()

    asyncio.run(scenario(spawner))


def test_a_promise_whose_attempt_is_gone_starts_at_once(tmp_path: Path, spawner: Spawner) -> None:
    make_spool(tmp_path, "true\n", name=SECOND)

    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent)
        attempts._start_or_wait(layout.SpoolDir(str(tmp_path), SECOND), FIRST)  # ended before the order came
        assert spawner.started == [SECOND] and not attempts.promised
        await until(lambda: SECOND in cleanup.begun)
        attempts.close()

    asyncio.run(scenario(spawner))


def test_a_node_that_leaves_ends_its_attempts_and_takes_its_promises_back(tmp_path: Path, spawner: Spawner,
                                                                          pair: Pair) -> None:
    """execd/leaving.py: the running attempt is stopped by its shepherd, the promised one ends
    without starting, and each exit record says the node left, and why."""
    from drover.execd import attempt_records

    why = "node slurm-7-0 left: its slurm allocation 7 ended"

    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent)
        hold(attempts, pair)  # the gate is never opened: the first attempt runs until it is stopped
        await until(lambda: Path(pair.first.record(layout.JOB_PID)).exists())
        attempts.leave_cluster(why)
        assert not attempts.promised and cleanup.begun == [SECOND]
        await until(lambda: FIRST in cleanup.begun)
        assert spawner.started == [FIRST] and not pair.second_out.exists()
        for name in (FIRST, SECOND):
            record = attempt_records.exit_status(layout.SpoolDir(str(tmp_path), name))
            assert record["terminated"] and record.get("node_left") and record["failure"] == why, (name, record)
        attempts.close()

    asyncio.run(scenario(spawner))


def test_a_promise_told_to_start_in_place_starts_at_once_on_the_cpus_it_is_given(tmp_path: Path, spawner: Spawner,
                                                                                 pair: Pair) -> None:
    """StartPromisedNow: room was freed beside the promise while the attempt it follows runs on.
    It starts now, as the same attempt, its config's CPUs rewritten and its `after` record gone;
    its Started report says it moved; a repeat of the order changes nothing."""
    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent)
        hold(attempts, pair)
        assert SECOND in attempts.promised
        attempts.start_promised_now(StartPromisedNow(SECOND, [1]))
        assert spawner.started == [FIRST, SECOND] and SECOND not in attempts.promised
        assert not attempts._following and not attempts._signal_facts  # nothing of the promise is left
        assert second_cpus(pair) == [1]
        assert not Path(pair.second.record(layout.AFTER)).exists()
        await until(lambda: any(isinstance(m, Started) and m.attempt == SECOND for m in sent))
        (started,) = [m for m in sent if isinstance(m, Started) and m.attempt == SECOND]
        assert started.moved
        await until(lambda: SECOND in cleanup.begun)
        assert pair.second_out.read_text() == "second\n"
        assert FIRST not in cleanup.begun  # the one it followed runs on
        attempts.start_promised_now(StartPromisedNow(SECOND, [1]))  # a repeat after a reconnect
        assert spawner.started == [FIRST, SECOND]
        pair.gate.touch()
        await until(lambda: FIRST in cleanup.begun)
        assert spawner.started == [FIRST, SECOND]  # not started a second time when the first ends
        attempts.close()

    asyncio.run(scenario(spawner))


@pytest.mark.parametrize("valid", [True, False], ids=["a config", "not a config"])
def test_the_config_written_again_to_start_in_place_is_handed_to_the_cleanup_only_if_it_is_one(
        tmp_path: Path, spawner: Spawner, pair: Pair, valid: bool) -> None:
    """What the cleanup holds in memory is taken without the checks of a record read back: a
    config record that is not one (its owner gone) is not handed over, and the cleanup reads it back,
    as any spool's, and finds it unreadable."""
    config = json.loads(Path(pair.second.record(layout.CONFIG)).read_text())
    if not valid:
        del config["owner"]
        Path(pair.second.record(layout.CONFIG)).write_text(json.dumps(config))

    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent)
        hold(attempts, pair)
        attempts.start_promised_now(StartPromisedNow(SECOND, [1]))
        ((name, handed),) = cleanup.rewritten
        assert name == SECOND
        if valid:
            assert handed == {**config, "cpu_ids": [1]}
        else:
            assert handed is None
        pair.gate.touch()
        await until(lambda: FIRST in cleanup.begun and SECOND in cleanup.begun)
        attempts.close()

    asyncio.run(scenario(spawner))


def test_the_order_to_start_in_place_is_ignored_for_a_promise_that_started_already(tmp_path: Path,
                                                                                  spawner: Spawner) -> None:
    """The attempt it followed ended before the order came: it started as promised, on its own
    CPUs, and the order changes nothing of it."""
    make_spool(tmp_path, "true\n", name=FIRST, cpu_ids=[0])
    make_spool(tmp_path, "sleep 0.5\n", name=SECOND, cpu_ids=[0])
    second = layout.SpoolDir(str(tmp_path), SECOND)
    Path(second.record(layout.AFTER)).write_text(FIRST)

    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent)
        attempts._start_or_wait(layout.SpoolDir(str(tmp_path), FIRST), None)
        attempts._start_or_wait(second, FIRST)
        await until(lambda: spawner.started == [FIRST, SECOND])  # the first ended: the promise started
        attempts.start_promised_now(StartPromisedNow(SECOND, [1]))
        assert spawner.started == [FIRST, SECOND]
        assert json.loads(Path(second.record(layout.CONFIG)).read_text())["cpu_ids"] == [0]
        assert not Path(second.record(layout.MOVED)).exists()
        await until(lambda: any(isinstance(m, Started) and m.attempt == SECOND for m in sent))
        assert not [m for m in sent if isinstance(m, Started) and m.attempt == SECOND and m.moved]
        await until(lambda: SECOND in cleanup.begun)
        attempts.close()

    asyncio.run(scenario(spawner))


def test_a_restarted_node_finishes_a_start_in_place_it_was_told_of(tmp_path: Path, spawner: Spawner,
                                                                   pair: Pair) -> None:
    """The node daemon stopped after recording the move, before the config was rewritten: the
    one started after it finishes the move and starts the attempt at once, saying it moved."""
    Path(pair.second.record(layout.MOVED)).write_text("[1]")

    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        before = attempts_on(tmp_path, spawner, cleanup, sent)
        before._start_or_wait(pair.first, None)
        await until(lambda: Path(pair.first.record(layout.PID)).exists())
        before.close()
        after = attempts_on(tmp_path, spawner, cleanup, sent)
        after.recover()
        assert spawner.started == [FIRST, SECOND] and not after.promised
        assert second_cpus(pair) == [1]
        assert not Path(pair.second.record(layout.AFTER)).exists()
        assert {known.attempt: known.moved for known in after.known()} == {FIRST: False, SECOND: True}
        pair.gate.touch()
        await until(lambda: SECOND in cleanup.begun and FIRST in cleanup.begun)
        after.close()

    asyncio.run(scenario(spawner))


def test_an_order_to_start_in_place_on_other_than_as_many_cpus_is_refused(tmp_path: Path, spawner: Spawner,
                                                                          pair: Pair) -> None:
    """The order gives as many CPUs as the attempt holds, each once: one that does not is
    refused, and the attempt stays promised, its config as it was."""
    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent)
        hold(attempts, pair)
        for cpu_ids in ([1, 2], [], [-1]):
            attempts.start_promised_now(StartPromisedNow(SECOND, cpu_ids))
        assert SECOND in attempts.promised and spawner.started == [FIRST]
        assert second_cpus(pair) == [0]
        assert not Path(pair.second.record(layout.MOVED)).exists()
        pair.gate.touch()
        await until(lambda: SECOND in cleanup.begun)
        attempts.close()

    asyncio.run(scenario(spawner))


def test_a_promise_started_in_place_keeps_what_its_signals_need(tmp_path: Path, spawner: Spawner, pair: Pair,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A signal that comes while the attempt is promised is not delivered (nothing of it runs),
    nor kept for later; once moved, the attempt's signals go to its job without its config being
    read again: what they need of it was kept from the order, as for any attempt started here
    (test_signal_config_reads.py), for the move rewrites its CPUs only."""
    third, ready, got = "9.0.1", tmp_path / "ready", tmp_path / "got"
    config = attempt_config(str(tmp_path), third, checkpoint_signal="SIGUSR2", cpu_ids=[0],
                            owner=pwd.getpwuid(os.geteuid()).pw_name)
    # Ends by itself after 30 s should the test fail before it signals it (and the spawner's
    # clean-up ends it before that).
    script = f"trap 'echo usr2 >> {got}; exit 0' USR2\ntouch {ready}\nfor i in $(seq 1500); do sleep 0.02; done\n"
    config_reads = []
    real_read_json = attempts_module.read_json

    def counted_read_json(path: str) -> Any:
        if os.path.basename(path) == layout.CONFIG:
            config_reads.append(path)
        return real_read_json(path)

    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent)
        attempts._start_or_wait(pair.first, None)
        attempts.start(StartAttempt(third, config, script, after=FIRST))  # type: ignore[arg-type]
        assert third in attempts.promised
        attempts.signal(SignalAttempt(third, "SIGUSR2"))
        attempts.start_promised_now(StartPromisedNow(third, [1]))
        assert spawner.started == [FIRST, third] and not attempts.promised
        await until(ready.exists)
        await asyncio.sleep(0.3)
        assert not got.exists()  # the signal sent while it was promised did not follow it
        monkeypatch.setattr(attempts_module, "read_json", counted_read_json)
        attempts.signal(SignalAttempt(third, "SIGUSR2"))
        monkeypatch.undo()
        assert config_reads == []
        await until(lambda: third in cleanup.begun)
        assert got.read_text() == "usr2\n"
        pair.gate.touch()
        await until(lambda: FIRST in cleanup.begun)
        attempts.close()

    asyncio.run(scenario(spawner))


def test_an_order_to_start_in_place_after_a_cancel_starts_nothing(tmp_path: Path, spawner: Spawner,
                                                                 pair: Pair) -> None:
    """The cancel came first and took the promise back (the controller's order to start it in
    place crossed it): the order finds no promise, starts nothing, and leaves the spool as the
    cancel left it; the attempt it followed ends without starting it."""
    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent)
        hold(attempts, pair)
        attempts.signal(SignalAttempt(SECOND, "terminate", "cancel"))
        attempts.start_promised_now(StartPromisedNow(SECOND, [1]))
        assert spawner.started == [FIRST] and not attempts.promised and cleanup.begun == [SECOND]
        assert not attempts._following
        assert second_cpus(pair) == [0] and not Path(pair.second.record(layout.MOVED)).exists()
        assert json.loads(Path(pair.second.record(layout.EXIT_STATUS)).read_text())["terminated"] is True
        assert json.loads(Path(pair.second.record(layout.STOP_REQUEST)).read_text()) == {"why": "cancel"}
        pair.gate.touch()
        await until(lambda: FIRST in cleanup.begun)
        await asyncio.sleep(0.2)
        assert spawner.started == [FIRST] and cleanup.begun == [SECOND, FIRST] and not pair.second_out.exists()
        attempts.close()

    asyncio.run(scenario(spawner))


# A controller taken over may send any StartPromisedNow its decoder lets through
# (protocol/node_channel.py): the node refuses what it cannot honour, starts nothing for it, and
# leaves the spool as it was, so that the promise still starts as promised when its time comes.

def records_of(spool: layout.SpoolDir) -> dict[str, bytes | None]:
    """What a move rewrites or removes in an attempt's spool, and the record it writes."""
    found: dict[str, bytes | None] = {}
    for record in (layout.CONFIG, layout.AFTER, layout.MOVED):
        path = Path(spool.record(record))
        found[record] = path.read_bytes() if path.exists() else None
    return found


def hostile(frame: str) -> StartPromisedNow:
    """The order a frame decodes to, as the node's channel decodes it."""
    (order,) = controller_decoder.decode(frame.encode())
    assert isinstance(order, StartPromisedNow)
    return order


async def starts_as_promised(attempts: Attempts, pair: Pair, spawner: Spawner, cleanup: Cleanup,
                             sent: list[Any]) -> None:
    """Nothing started but the first attempt; once it ends, the promise starts as promised, on
    the CPUs its order gave it, and runs."""
    assert spawner.started == [FIRST] and SECOND in attempts.promised
    pair.gate.touch()
    await until(lambda: SECOND in cleanup.begun)
    assert spawner.started == [FIRST, SECOND] and pair.second_out.read_text() == "second\n"
    assert [m.moved for m in sent if isinstance(m, Started) and m.attempt == SECOND] == [False]
    attempts.close()


def test_an_order_to_start_in_place_on_a_cpu_twice_is_refused(tmp_path: Path, spawner: Spawner, pair: Pair) -> None:
    """An attempt that holds two CPUs, told to start in place on one of them twice: as many ids
    as it holds, but not as many CPUs."""
    config = json.loads(Path(pair.second.record(layout.CONFIG)).read_text())
    Path(pair.second.record(layout.CONFIG)).write_text(json.dumps({**config, "cpus": 2, "cpu_ids": [0, 1]}))
    before = records_of(pair.second)

    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent)
        hold(attempts, pair)
        for frame in ('[1, 1]', '[0, 0]', '[1, 1, 0]'):
            attempts.start_promised_now(hostile(f'[{{"type": "start_promised_now", "attempt": "{SECOND}", '
                                                f'"cpu_ids": {frame}}}]'))
        assert records_of(pair.second) == before
        await starts_as_promised(attempts, pair, spawner, cleanup, sent)

    asyncio.run(scenario(spawner))


def test_an_order_to_start_in_place_on_a_cpu_the_node_does_not_have_is_refused(tmp_path: Path, spawner: Spawner,
                                                                               pair: Pair) -> None:
    """A node of two CPUs (its hello's count): the controller's CPU ids there are 0 and 1. An id
    beyond them would rewrite the config with a CPU the shepherd cannot pin (it runs the job on
    every CPU instead), and one of a thousand digits, which the decoder lets through, is no CPU
    either; the last order, on CPU 1, is one the node takes."""
    before = records_of(pair.second)

    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent, cpus=2)
        hold(attempts, pair)
        for cpu in ("2", "3", str(1 << 16), "9" * 1000, "-1"):
            attempts.start_promised_now(hostile(f'[{{"type": "start_promised_now", "attempt": "{SECOND}", '
                                                f'"cpu_ids": [{cpu}]}}]'))
        assert records_of(pair.second) == before and spawner.started == [FIRST]
        attempts.start_promised_now(StartPromisedNow(SECOND, [1]))
        assert spawner.started == [FIRST, SECOND] and second_cpus(pair) == [1]
        await until(lambda: SECOND in cleanup.begun)
        pair.gate.touch()
        await until(lambda: FIRST in cleanup.begun)
        attempts.close()

    asyncio.run(scenario(spawner))


def test_an_order_to_start_in_place_an_attempt_not_promised_here_is_refused(tmp_path: Path, spawner: Spawner,
                                                                           pair: Pair) -> None:
    """The attempt the promise follows (it runs), one the node never held, and names that are no
    attempt's (a path out of the spool, a name of thousands of digits): the node starts nothing,
    makes no spool and changes none."""
    first_before, second_before = records_of(pair.first), records_of(pair.second)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"

    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        attempts = attempts_on(tmp_path, spawner, cleanup, sent)
        hold(attempts, pair)
        entries = sorted(os.listdir(tmp_path))
        for name in (FIRST, "99.0.1", f"../{outside.name}", f"{SECOND}/../../{outside.name}", "9" * 5000, ""):
            attempts.start_promised_now(StartPromisedNow(name, [1]))
        assert sorted(os.listdir(tmp_path)) == entries and not outside.exists()
        assert records_of(pair.first) == first_before and records_of(pair.second) == second_before
        assert FIRST in attempts.live and not attempts.live[FIRST].moved
        await starts_as_promised(attempts, pair, spawner, cleanup, sent)
        assert records_of(pair.first) == first_before  # nor when it has ended
        attempts.start_promised_now(StartPromisedNow(FIRST, [1]))
        assert records_of(pair.first) == first_before and spawner.started == [FIRST, SECOND]

    asyncio.run(scenario(spawner))


# A node daemon restarted with fewer CPUs than the one before offered (its config changed) finds,
# in the spool, attempts prepared and never started on a CPU it no longer offers: started, their
# shepherds could not pin them and would run them on every CPU. Each ends as an attempt the node
# could not set up (node_fault: the controller requeues the job), without a shepherd, and its
# report goes through its cleanup as any other; what already runs runs on, pinned where it was.

def ended_unstarted(spool: layout.SpoolDir, cpu: int) -> None:
    """The attempt's exit record says the node could not start it on `cpu`, which it no longer offers."""
    status = json.loads(Path(spool.record(layout.EXIT_STATUS)).read_text())
    assert status["node_fault"] is True and status["exit_code"] is None and not status["terminated"], status
    assert status["failure"] == ("the node could not start the attempt after its restart: "
                                 f"CPU {cpu} is not one this node offers (it offers CPU 0)")
    assert Path(spool.record(layout.ERROR)).read_text() == status["failure"] + "\n"
    assert not Path(spool.record(layout.PID)).exists()  # no shepherd ever ran for it


async def restarted_on_one_cpu(tmp_path: Path, spawner: Spawner, cleanup: Cleanup, sent: list[Any],
                               first: layout.SpoolDir) -> Attempts:
    """A node of two CPUs that started `first` (on CPU 1) and stopped once its job ran, back with
    one CPU: its attempts as the restarted daemon recovered them."""
    before = attempts_on(tmp_path, spawner, cleanup, sent, cpus=2)
    before._start_or_wait(first, None)
    await until(lambda: Path(first.record(layout.JOB_PID)).exists())
    before.close()
    after = attempts_on(tmp_path, spawner, cleanup, sent, cpus=1)
    after.recover()
    return after


def test_a_node_restarted_with_fewer_cpus_ends_a_start_in_place_on_a_cpu_it_lost(tmp_path: Path, spawner: Spawner,
                                                                                pair: Pair) -> None:
    """The node daemon stopped after recording the move to CPU 1, before the config was rewritten,
    and came back offering one CPU: the move is not finished, the promise does not start when the
    attempt it follows ends either, and its config is as it was."""
    Path(pair.second.record(layout.MOVED)).write_text("[1]")
    config_before = Path(pair.second.record(layout.CONFIG)).read_bytes()

    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        before = attempts_on(tmp_path, spawner, cleanup, sent, cpus=2)
        before._start_or_wait(pair.first, None)
        await until(lambda: Path(pair.first.record(layout.PID)).exists())
        before.close()
        after = attempts_on(tmp_path, spawner, cleanup, sent, cpus=1)
        after.recover()
        assert spawner.started == [FIRST] and not after.promised and cleanup.begun == [SECOND]
        assert {known.attempt for known in after.known() if known.running} == {FIRST}
        ended_unstarted(pair.second, 1)
        assert Path(pair.second.record(layout.CONFIG)).read_bytes() == config_before
        pair.gate.touch()
        await until(lambda: FIRST in cleanup.begun)
        await asyncio.sleep(0.2)
        assert spawner.started == [FIRST] and not pair.second_out.exists()
        after.close()

    asyncio.run(scenario(spawner))


def test_a_node_restarted_with_fewer_cpus_ends_what_would_start_on_a_cpu_it_lost(tmp_path: Path,
                                                                                spawner: Spawner) -> None:
    """On CPU 1, which the node no longer offers: an attempt that runs (it runs on), a promise
    behind it, and an attempt whose spool was written whole but whose shepherd never started (the
    daemon stopped in between); on CPU 0, one like the last, which starts. The last but one would
    start now: it ends at once. The promise waits, as a promise: its controller, told by the
    hello, takes it back meanwhile (test_a_promise_on_a_cpu_the_node_lost_may_be_taken_back_or_moved);
    here it does not, and the promise ends, unstarted, when the attempt it follows ends."""
    gate, third, fourth = tmp_path / "gate", "9.0.1", "10.0.1"
    make_spool(tmp_path, f"while [ ! -e {gate} ]; do sleep 0.02; done\n", name=FIRST, cpu_ids=[1])
    make_spool(tmp_path, f"touch {tmp_path}/second.ran\n", name=SECOND, cpu_ids=[1])
    make_spool(tmp_path, f"touch {tmp_path}/third.ran\n", name=third, cpu_ids=[1])
    make_spool(tmp_path, f"touch {tmp_path}/fourth.ran\n", name=fourth, cpu_ids=[0])
    first, second = layout.SpoolDir(str(tmp_path), FIRST), layout.SpoolDir(str(tmp_path), SECOND)
    Path(second.record(layout.AFTER)).write_text(FIRST)

    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        after = await restarted_on_one_cpu(tmp_path, spawner, cleanup, sent, first)
        assert spawner.started == [FIRST, fourth] and cleanup.begun == [third]
        ended_unstarted(layout.SpoolDir(str(tmp_path), third), 1)
        assert SECOND in after.promised
        assert {known.attempt: known.promised for known in after.known() if known.running} == {
            FIRST: False, SECOND: True, fourth: False}
        await until(lambda: fourth in cleanup.begun)
        assert (tmp_path / "fourth.ran").exists()
        assert FIRST in after.live and FIRST not in cleanup.begun  # it runs on
        gate.touch()
        await until(lambda: FIRST in cleanup.begun)
        assert SECOND in cleanup.begun and not after.promised and not after._unplaced_promises
        ended_unstarted(second, 1)
        await asyncio.sleep(0.2)
        assert spawner.started == [FIRST, fourth]
        assert not (tmp_path / "second.ran").exists() and not (tmp_path / "third.ran").exists()
        after.close()

    asyncio.run(scenario(spawner))


def test_a_promise_on_a_cpu_the_node_lost_may_be_taken_back_or_moved(tmp_path: Path, spawner: Spawner) -> None:
    """Two such promises behind an attempt that runs on CPU 1: the controller takes one back (a
    requeue: it ends stopped, as any promise taken back, not as a failure of the node's), and
    tells the other to start in place on CPU 0, which the node offers: it starts there at once."""
    gate, third = tmp_path / "gate", "9.0.1"
    make_spool(tmp_path, f"while [ ! -e {gate} ]; do sleep 0.02; done\n", name=FIRST, cpu_ids=[1])
    make_spool(tmp_path, f"touch {tmp_path}/second.ran\n", name=SECOND, cpu_ids=[1])
    make_spool(tmp_path, f"touch {tmp_path}/third.ran\n", name=third, cpu_ids=[1])
    first = layout.SpoolDir(str(tmp_path), FIRST)
    second, moved = layout.SpoolDir(str(tmp_path), SECOND), layout.SpoolDir(str(tmp_path), third)
    for promise in (second, moved):
        Path(promise.record(layout.AFTER)).write_text(FIRST)

    async def scenario(spawner: Spawner) -> None:
        cleanup, sent = Cleanup(), []
        after = await restarted_on_one_cpu(tmp_path, spawner, cleanup, sent, first)
        assert set(after.promised) == {SECOND, third} and spawner.started == [FIRST]
        after.signal(SignalAttempt(SECOND, "terminate", "requeue"))
        assert cleanup.begun == [SECOND]
        status = json.loads(Path(second.record(layout.EXIT_STATUS)).read_text())
        assert status["terminated"] is True and not status.get("node_fault") and status["failure"] is None
        after.start_promised_now(StartPromisedNow(third, [0]))
        assert spawner.started == [FIRST, third] and not after.promised and not after._unplaced_promises
        await until(lambda: third in cleanup.begun)
        assert (tmp_path / "third.ran").exists()
        gate.touch()
        await until(lambda: FIRST in cleanup.begun)
        await asyncio.sleep(0.2)
        assert spawner.started == [FIRST, third] and not (tmp_path / "second.ran").exists()
        after.close()

    asyncio.run(scenario(spawner))
