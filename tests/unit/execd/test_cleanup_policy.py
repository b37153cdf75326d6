"""The cleanup pipeline's retry policy: the back-off on plain numbers, each step's bound, and the
pipeline itself on a spool in a temporary directory with a controller played by the test (no
processes, no sockets)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from drover import eventloop
from drover.controller.nodes import staged_files
from drover.core.job import with_given_up
from drover.execd import cleanup as cleanup_module
from drover.execd.cleanup import (
    REMOVING,
    STEPS,
    Cleanup,
    CleanupSettings,
    NextMove,
    StepFailed,
    next_move,
    retry_delay,
)
from drover.protocol.node_channel import Exited, Exiting, Progress, StagedChunk, StagedOut
from drover.records import CleanupProgress
from drover.spool import layout
from drover.spool.atomic import read_json, write_json

OK = {"exit_code": 0, "signal": None, "failure": None, "timed_out": False, "terminated": False,
      "out_of_memory": False}
FAST = CleanupSettings(retry_first_s=0.001, retry_max_s=0.004, report_timeout_s=0.05)


# -- the policy, on plain data ----------------------------------------------------------------

def test_the_back_off_doubles_from_the_first_delay_and_stops_at_the_cap() -> None:
    assert [retry_delay(tries, 0.5, 30.0) for tries in range(0, 9)] == [
        0.5, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


def test_the_back_off_stays_at_the_cap_however_many_tries_failed() -> None:
    """A report refused for hours counts thousands of tries: the delay never overflows."""
    assert retry_delay(10_000, 0.5, 30.0) == 30.0
    assert retry_delay(2**40, 0.5, 300.0) == 300.0


def test_every_step_but_the_report_is_bounded_by_its_setting() -> None:
    settings = CleanupSettings(exit_hook_tries=2, stage_out_tries=3, record_tries=4, mail_tries=5, remove_tries=6)
    assert {step: settings.tries(step) for step in STEPS} == {
        "exit_hook": 2, "stage_out": 3, "record": 4, "report": None, "mail": 5, "remove": 6}


@pytest.mark.parametrize("step", [s for s in STEPS if s != "report"])
def test_a_bounded_step_is_retried_with_back_off_then_given_up_at_its_bound(step: str) -> None:
    settings = CleanupSettings(exit_hook_tries=3, stage_out_tries=3, record_tries=3, mail_tries=3, remove_tries=3,
                               retry_first_s=1.0, retry_max_s=60.0)
    assert next_move(settings, step, 0, counted=True) == NextMove(1, False, 1.0)
    assert next_move(settings, step, 1, counted=True) == NextMove(2, False, 2.0)
    assert next_move(settings, step, 2, counted=True) == NextMove(3, True, 0.0)


def test_the_report_is_never_given_up_and_its_back_off_is_capped() -> None:
    settings = CleanupSettings(retry_first_s=0.5, retry_max_s=30.0)
    moves = [next_move(settings, "report", tries, counted=True) for tries in range(0, 5000, 7)]
    assert not any(move.give_up for move in moves)
    assert max(move.delay_s for move in moves) == 30.0
    assert moves[-1] == NextMove(4999, False, 30.0)


def test_a_try_that_could_not_reach_the_controller_costs_no_try_and_waits_for_the_reconnection() -> None:
    settings = CleanupSettings(stage_out_tries=1, retry_first_s=0.5, retry_max_s=30.0)
    assert next_move(settings, "stage_out", 0, counted=False) == NextMove(0, False, 30.0)
    assert next_move(settings, "report", 3, counted=False) == NextMove(3, False, 30.0)
    assert next_move(settings, "stage_out", 0, counted=True).give_up


def test_a_step_given_up_is_kept_once_whatever_else_the_record_holds() -> None:
    progress: CleanupProgress = {"done": ["exit_hook"], "step": None, "tries": 0, "error": None,
                                 "staged_out": ["out.txt"]}
    first = with_given_up(progress, [{"step": "exit_hook", "tries": 2, "error": "status 3"}])
    again = with_given_up(first, [{"step": "exit_hook", "tries": 2, "error": "status 3"}])
    later = with_given_up(again, [{"step": "mail", "tries": 5, "error": "relay down"}])
    assert again == first and first["staged_out"] == ["out.txt"] and "given_up" not in progress
    assert later["given_up"] == [{"step": "exit_hook", "tries": 2, "error": "status 3"},
                                 {"step": "mail", "tries": 5, "error": "relay down"}]
    assert with_given_up(None, []) == {"done": [], "step": None, "tries": 0, "error": None}


# -- the pipeline, with the controller played by the test -------------------------------------

class Controller:
    """Records what the node sends; acknowledges reports (from the `ack_report_from`-th on) and
    steps given up, as the controller does."""

    def __init__(self, ack_report_from: int = 1) -> None:
        self.sent: list[Any] = []
        self.ack_report_from = ack_report_from
        self.ack_given_up = True
        self.cleanup: Cleanup | None = None

    def send(self, message: Any) -> None:
        self.sent.append(message)
        assert self.cleanup is not None
        loop = asyncio.get_running_loop()
        if isinstance(message, Exited) and len(self.reports()) >= self.ack_report_from:
            loop.call_soon(self.cleanup.acknowledged, [message.attempt], "report")
        if isinstance(message, Progress) and message.given_up and self.ack_given_up:
            loop.call_soon(self.cleanup.acknowledged, [message.attempt], f"given_up:{message.step}")

    def reports(self) -> list[Exited]:
        return [m for m in self.sent if isinstance(m, Exited)]

    def failures(self) -> list[Progress]:
        return [m for m in self.sent if isinstance(m, Progress) and m.error]


def ended_spool(root: Path, name: str = "7.0.1") -> layout.SpoolDir:
    root.mkdir(exist_ok=True)
    spool = layout.SpoolDir(str(root), name)
    os.mkdir(spool.path)
    write_json(spool.record(layout.EXIT_STATUS), OK)
    return spool


async def until(condition: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.005)


def run(test: Callable[[], Coroutine[Any, Any, None]]) -> None:
    eventloop.run(test())  # the execd's own loop (uvloop where it is installed)


def pipeline(root: Path, settings: CleanupSettings, controller: Controller,
             connected: Callable[[], bool] = lambda: True) -> Cleanup:
    # As on a disk, wherever the test's directory is: its removals go through `_remove_tree`.
    cleanup = Cleanup(str(root), settings, controller.send, connected=connected, in_memory=False)
    controller.cleanup = cleanup
    return cleanup


def test_a_final_record_the_disk_cannot_take_is_given_up_and_the_report_goes_on(tmp_path: Path) -> None:
    async def scenario() -> None:
        root = tmp_path / "spool"
        spool = ended_spool(root)
        os.mkdir(spool.record(cleanup_module.FINAL))  # the record's place is taken: every write fails
        controller = Controller()
        cleanup = pipeline(root, CleanupSettings(retry_first_s=0.001, retry_max_s=0.004, record_tries=3), controller)
        cleanup.begin(spool)
        await until(lambda: not cleanup.pending)
        (report,) = controller.reports()
        assert report.exit_status == OK and report.done == ["exit_hook", "stage_out", "record", "report"]
        (given_up,) = report.given_up
        assert given_up["step"] == "record" and given_up["tries"] == 3 and "Is a directory" in given_up["error"]
        assert [f.tries for f in controller.failures()] == [1, 2, 3] and controller.failures()[-1].given_up
        assert not os.path.exists(spool.path) and os.listdir(root) == []

    run(scenario)


def test_a_report_the_controller_keeps_refusing_is_retried_past_any_bound_with_capped_back_off(tmp_path: Path) -> None:
    async def scenario() -> None:
        root = tmp_path / "spool"
        spool = ended_spool(root)
        controller = Controller(ack_report_from=9)
        cleanup = pipeline(root, FAST, controller)
        cleanup.begin(spool)
        await until(lambda: not cleanup.pending)
        assert len(controller.reports()) == 9
        assert [f.tries for f in controller.failures()] == list(range(1, 9))
        assert not any(f.given_up for f in controller.failures())
        assert controller.reports()[-1].given_up == []

    run(scenario)


def test_while_the_controller_is_unreachable_the_report_waits_for_the_reconnection(tmp_path: Path) -> None:
    async def scenario() -> None:
        root = tmp_path / "spool"
        spool = ended_spool(root)
        up = False
        controller = Controller(ack_report_from=2)  # the first report is lost with the channel
        settings = CleanupSettings(retry_first_s=0.001, retry_max_s=3600.0, report_timeout_s=0.05)
        cleanup = pipeline(root, settings, controller, connected=lambda: up)
        cleanup.begin(spool)
        await until(lambda: controller.failures())
        await asyncio.sleep(0.2)
        assert len(controller.reports()) == 1 and controller.failures()[0].tries == 0  # not counted, not retried
        up = True
        cleanup.trigger_all()
        await until(lambda: not cleanup.pending)
        assert len(controller.reports()) == 2
        assert [m for m in controller.sent if isinstance(m, Exiting)]  # said again on reconnecting

    run(scenario)


def test_a_reconnection_does_not_hurry_a_step_backing_off_from_a_failure_of_the_nodes_own(tmp_path: Path) -> None:
    async def scenario() -> None:
        root = tmp_path / "spool"
        spool = ended_spool(root)
        controller = Controller()
        settings = CleanupSettings(exit_hook="/bin/false", exit_hook_tries=2, retry_first_s=3600.0)
        cleanup = pipeline(root, settings, controller)
        cleanup.begin(spool)
        await until(lambda: controller.failures())
        for _ in range(3):
            cleanup.trigger_all()
            await asyncio.sleep(0.1)
        assert [f.tries for f in controller.failures()] == [1]  # the hook's tries are not used up
        assert read_json(spool.record(layout.CLEANUP))["step"] == "exit_hook"
        cleanup.trigger("7.0.1")  # its timer
        await until(lambda: not cleanup.pending)
        assert controller.reports()[0].given_up == [
            {"step": "exit_hook", "tries": 2, "error": "the exit hook exited with status 1: "}]

    run(scenario)


def test_a_spool_that_cannot_be_removed_is_given_up_left_aside_and_said_until_acknowledged(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def cannot(path: str) -> None:
        raise StepFailed(f"cannot remove the spool {path}: {path}/work/f: Operation not permitted")

    monkeypatch.setattr(cleanup_module, "_remove_tree", cannot)

    async def scenario() -> None:
        root = tmp_path / "spool"
        spool = ended_spool(root)
        controller = Controller()
        controller.ack_given_up = False  # lost with the channel
        cleanup = pipeline(root, CleanupSettings(retry_first_s=0.001, retry_max_s=0.004, remove_tries=2), controller)
        cleanup.begin(spool)
        await until(lambda: not cleanup.pending)
        await asyncio.sleep(0.05)
        assert cleanup._untold  # nothing acknowledged it
        controller.ack_given_up = True
        cleanup.trigger_all()  # the reconnection: said again
        await until(lambda: not cleanup._untold)
        given_up = [f for f in controller.failures() if f.given_up]
        assert len(given_up) == 2 and all(f.step == "remove" and f.tries == 2 for f in given_up)
        assert f"{REMOVING}7.0.1" in given_up[0].error  # type: ignore[operator]
        assert os.listdir(root) == [f"{REMOVING}7.0.1"]  # left aside: no longer an attempt's name
        assert layout.attempt_names(str(root)) == []

    run(scenario)


def test_a_spool_left_in_place_after_its_removal_was_given_up_is_not_cleaned_again(tmp_path: Path) -> None:
    async def scenario() -> None:
        root = tmp_path / "spool"
        spool = ended_spool(root)
        write_json(spool.record(layout.CLEANUP), {
            "done": list(STEPS), "step": None, "tries": 0, "error": None,
            "given_up": [{"step": "remove", "tries": 5, "error": "cannot move the spool aside"}]})
        controller = Controller()
        cleanup = pipeline(root, FAST, controller)
        cleanup.begin(spool)
        await asyncio.sleep(0.05)
        assert not cleanup.pending and controller.sent == [] and os.path.isdir(spool.path)

    run(scenario)


def test_a_step_that_fails_unexpectedly_is_bounded_like_any_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(spool: layout.SpoolDir) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(cleanup_module, "_final_record", broken)  # the record and the mail step use it

    async def scenario() -> None:
        root = tmp_path / "spool"
        spool = ended_spool(root)
        controller = Controller()
        cleanup = pipeline(root, CleanupSettings(retry_first_s=0.001, retry_max_s=0.004, record_tries=2), controller)
        cleanup.begin(spool)
        await until(lambda: not cleanup.pending)
        (report,) = controller.reports()
        assert report.given_up == [{"step": "record", "tries": 2, "error": "unexpected error: RuntimeError('a bug')"}]

    run(scenario)


def test_an_exit_hook_that_exits_without_reading_its_record_is_judged_by_its_status(tmp_path: Path) -> None:
    hook = tmp_path / "hook.sh"
    hook.write_text("#!/bin/sh\necho 'the site says no' >&2\nexit 3\n")
    hook.chmod(0o755)

    async def scenario() -> None:
        for number in range(1, 21):  # the hook is often gone before its record is written
            root = tmp_path / "spool"
            spool = ended_spool(root, f"7.0.{number}")
            controller = Controller()
            cleanup = pipeline(root, CleanupSettings(exit_hook=str(hook), exit_hook_tries=1), controller)
            cleanup.begin(spool)
            await until(lambda c=cleanup: not c.pending)  # type: ignore[misc]
            assert controller.reports()[0].given_up == [
                {"step": "exit_hook", "tries": 1, "error": "the exit hook exited with status 3: the site says no"}]

    run(scenario)


def test_a_hook_gone_before_its_record_is_written_is_no_error_of_the_pipelines() -> None:
    async def scenario() -> None:
        process = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", "echo gone >&2; exit 3", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        await asyncio.sleep(0.2)  # it has exited: its stdin is closed
        assert await cleanup_module._hook_ran(process, b"x" * 100_000) == b"gone\n"
        assert process.returncode == 3

    run(scenario)


class FileKeeper(Controller):
    """A controller that keeps staged-out files (controller/nodes/staged_files.py) and answers each
    chunk; it loses its answer to the chunks at the offsets in `lose` once each."""

    def __init__(self, files_dir: Path, lose: tuple[int, ...] = ()) -> None:
        super().__init__()
        self.files_dir = str(files_dir)
        self.lose = set(lose)

    def send(self, message: Any) -> None:
        super().send(message)
        assert self.cleanup is not None
        loop = asyncio.get_running_loop()
        if isinstance(message, StagedChunk):
            answer = staged_files.keep_chunk(self.files_dir, message, 64 << 20)
            if message.offset in self.lose:
                self.lose.discard(message.offset)
            else:
                loop.call_soon(self.cleanup.chunk_kept, answer)
        if isinstance(message, StagedOut):
            staged_files.keep(self.files_dir, message)
            loop.call_soon(self.cleanup.acknowledged, [message.attempt], "stage_out")


def spool_with_output(root: Path, data: bytes) -> layout.SpoolDir:
    spool = ended_spool(root)
    os.mkdir(spool.record(layout.STAGED_OUT_DIR))
    with open(os.path.join(spool.record(layout.STAGED_OUT_DIR), "0"), "wb") as file:
        file.write(data)
    write_json(spool.record(layout.STAGED_OUT), {
        "files": [{"name": "out/big.bin", "record": "0", "mode": 0o640, "size": len(data)}], "skipped": [],
        "refused": []})
    return spool


def test_staged_out_files_go_in_chunks_and_a_retry_goes_on_from_what_the_controller_holds(tmp_path: Path) -> None:
    """A 2.5 MiB file goes in three chunks; the answer to the second is lost, the try fails, and
    the next try sends the second chunk again, not the first: the file arrives whole, once."""
    data = os.urandom(5 << 19)

    async def scenario() -> None:
        spool = spool_with_output(tmp_path / "spool", data)
        controller = FileKeeper(tmp_path / "files", lose=(1 << 20,))
        cleanup = pipeline(tmp_path / "spool", FAST, controller)
        cleanup.begin(spool)
        await until(lambda: not cleanup.pending)
        chunks = [m.offset for m in controller.sent if isinstance(m, StagedChunk)]
        assert chunks == [0, 1 << 20, 1 << 20, 2 << 20]
        assert all(len(m.data) <= 1 << 20 for m in controller.sent if isinstance(m, StagedChunk))
        assert "chunk" in controller.failures()[0].error

    run(scenario)
    assert (tmp_path / "files" / "7.0.1" / "out" / "big.bin").read_bytes() == data


def test_a_controller_of_an_earlier_version_gets_the_files_whole_in_the_report(tmp_path: Path) -> None:
    async def scenario() -> None:
        spool = spool_with_output(tmp_path / "spool", b"small")
        controller = FileKeeper(tmp_path / "files")
        cleanup = Cleanup(str(tmp_path / "spool"), FAST, controller.send, chunks=lambda: False)
        controller.cleanup = cleanup
        cleanup.begin(spool)
        await until(lambda: not cleanup.pending)
        assert not [m for m in controller.sent if isinstance(m, StagedChunk)]
        (report,) = [m for m in controller.sent if isinstance(m, StagedOut)]
        assert [(f.name, f.data, f.mode) for f in report.files] == [("out/big.bin", b"small", 0o640)]

    run(scenario)
