"""How many times the node opens, looks at and writes an attempt's records in its cleanup after
the job ended: each record at most once, and the cleanup's own writes folded into the final
record. Counted at the system calls (every `open`, `os.open` and `os.stat` of a path in the
spool), so that a read added anywhere on the way shows here, whichever function does it."""

from __future__ import annotations

import asyncio
import builtins
import json
import os
import pwd
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.attempt_config import attempt_config

from drover import eventloop
from drover.execd import cleanup as cleanup_module
from drover.execd import output_index
from drover.execd.attempt_records import NODE_LEFT
from drover.execd.cleanup import FLAT_MAX_BYTES, Cleanup, CleanupSettings
from drover.protocol.node_channel import Exited, Exiting
from drover.spool import layout
from drover.spool.atomic import read_json, write_json
from drover.spool.outcome import make_reserve
from drover.spool.spare_reserves import DIRECTORY as SPARES
from drover.spool.spare_reserves import SpareReserves

OK = {"exit_code": 0, "signal": None, "failure": None, "timed_out": False, "terminated": False,
      "out_of_memory": False}
USAGE = {"user_cpu_s": 0.001, "sys_cpu_s": 0.001, "max_rss_kib": 1000, "minor_faults": 90, "major_faults": 0,
         "voluntary_switches": 1, "involuntary_switches": 0, "wall_s": 0.01, "started_at": 1.0, "ended_at": 1.01}
WRITES = os.O_WRONLY | os.O_RDWR


class Counted:
    """The system calls on the files below `root`, by kind and by file name."""

    def __init__(self, root: str) -> None:
        self.root = root + os.sep
        self.reads: Counter[str] = Counter()  # opens for reading, found or not
        self.looks: Counter[str] = Counter()  # stat: whether a record is there
        self.writes: Counter[str] = Counter()  # files created (an atomic write's temporary file)
        self.on = False  # counting: from the cleanup's start to its end, not while the test writes a spool

    def _ours(self, path: Any) -> str | None:
        """The record's name, for a path in an attempt's directory or the node's output index."""
        path = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else ""
        if not self.on or not path.startswith(self.root):
            return None
        directory, name = os.path.split(path)
        if not (layout.is_attempt_name(os.path.basename(directory)) or directory.endswith(output_index.DIRECTORY)):
            return None
        return name.removeprefix(".").removesuffix(".tmp")

    def wrap(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real_open, real_os_open, real_stat = builtins.open, os.open, os.stat

        def counted_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            name = self._ours(file)
            if name is not None and not set(mode) & set("wax+"):
                self.reads[name] += 1
            return real_open(file, mode, *args, **kwargs)

        def counted_os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            name = self._ours(path)
            if name is not None and not flags & os.O_DIRECTORY:
                (self.writes if flags & WRITES else self.reads)[name] += 1
            return real_os_open(path, flags, *args, **kwargs)

        def counted_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
            name = self._ours(path)
            if name is not None:
                self.looks[name] += 1
            return real_stat(path, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", counted_open)
        monkeypatch.setattr(os, "open", counted_os_open)
        monkeypatch.setattr(os, "stat", counted_stat)


class Controller:
    """Acknowledges every report at once, as a controller that is up does."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.cleanup: Cleanup | None = None

    def send(self, message: Any) -> None:
        self.sent.append(message)
        if isinstance(message, Exited):
            assert self.cleanup is not None
            asyncio.get_running_loop().call_soon(self.cleanup.acknowledged, [message.attempt], "report")


def ended_spool(root: Path, name: str = "7.0.1", usage_apart: bool = False) -> layout.SpoolDir:
    """An attempt's spool as a shepherd leaves it after a plain job that exited 0, on a node that
    ran one before (its index of where outputs are, for `drover logs`, is there): the usage in
    the exit record; `usage_apart`: in a `usage` record of its own, as an earlier Drover's
    shepherd wrote it."""
    (root / output_index.DIRECTORY).mkdir(parents=True, exist_ok=True)
    spool = layout.SpoolDir(str(root), name)
    os.mkdir(spool.path)
    write_json(spool.record(layout.CONFIG), attempt_config(str(root), name))
    if usage_apart:
        write_json(spool.record(layout.USAGE), USAGE)
        write_json(spool.record(layout.EXIT_STATUS), OK)
    else:
        write_json(spool.record(layout.EXIT_STATUS), {**OK, "usage": USAGE})
    return spool


def cleaned(root: Path, spool: layout.SpoolDir, counted: Counted,
            before: Callable[[Cleanup], None] = lambda cleanup: None, in_memory: bool | None = None,
            hand_offs: list[str] | None = None, spares: SpareReserves | None = None) -> Controller:
    """Run the whole pipeline on `spool`, counting from its start to the spool's removal;
    `in_memory`: whether the spool's file system is taken as kept in memory (None: as it is);
    `hand_offs`: gets the name of each function handed to the cleanup's threads."""
    async def scenario() -> None:
        controller = Controller()
        cleanup = controller.cleanup = Cleanup(str(root), CleanupSettings(), controller.send, in_memory=in_memory,
                                               spares=spares)
        if hand_offs is not None:
            submit = cleanup._threads.submit

            def counted_submit(work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
                hand_offs.append(getattr(work, "__qualname__", repr(work)))
                return submit(work, *args, **kwargs)

            cleanup._threads.submit = counted_submit  # type: ignore[method-assign]
        before(cleanup)
        counted.on = True
        cleanup.begin(spool)
        while cleanup.pending:
            await asyncio.sleep(0.005)
        counted.on = False
        outcome.append(controller)

    outcome: list[Controller] = []
    _run(scenario)
    assert not os.path.exists(spool.path)
    return outcome[0]


def _run(test: Callable[[], Coroutine[Any, Any, None]]) -> None:
    eventloop.run(test())


@pytest.fixture
def counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Counted]:
    counter = Counted(str(tmp_path / "spool"))
    counter.wrap(monkeypatch)
    yield counter


def test_an_attempt_found_in_the_spool_at_start_has_each_record_read_at_most_once(
        tmp_path: Path, counted: Counted) -> None:
    """As a restarted node takes up an attempt an earlier one left: its cleanup's progress and
    whether the node left are read from the spool, once; then the shepherd's records, once each."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    controller = cleaned(root, spool, counted)
    assert max(counted.reads.values()) == 1, counted.reads
    assert set(counted.reads) <= {layout.CLEANUP, cleanup_module.FINAL, NODE_LEFT, layout.EXIT_STATUS,
                                  layout.CONFIG}, counted.reads
    assert sum(counted.looks.values()) <= 1, counted.looks  # over_memory
    # The final record, with the cleanup's progress in it, and where the output is for `drover logs`.
    assert counted.writes == Counter({cleanup_module.FINAL: 1, "7.0.1": 1}), counted.writes
    (report,) = [m for m in controller.sent if isinstance(m, Exited)]
    assert report.exit_status == OK and report.usage == USAGE


def test_an_attempt_this_node_started_reads_only_what_the_shepherd_wrote(tmp_path: Path, counted: Counted) -> None:
    """Its spool was made by this node in this process: no cleanup progress, no mark that the node
    left, can be there but what the node holds in memory."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    cleaned(root, spool, counted, before=lambda cleanup: cleanup.made_here(spool.name))
    assert counted.reads == Counter({layout.EXIT_STATUS: 1, layout.CONFIG: 1}), counted.reads
    assert counted.writes == Counter({cleanup_module.FINAL: 1, "7.0.1": 1}), counted.writes


def test_an_attempt_this_node_started_with_the_config_it_wrote_reads_only_its_exit_record(
        tmp_path: Path, counted: Counted) -> None:
    """The node wrote the config itself, and the shepherd only reads it: the cleanup takes it
    from memory, and its final record holds it as written."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    config = read_json(spool.record(layout.CONFIG))
    cleaned(root, spool, counted, before=lambda cleanup: cleanup.made_here(spool.name, config))
    assert counted.reads == Counter({layout.EXIT_STATUS: 1}), counted.reads
    assert counted.writes == Counter({cleanup_module.FINAL: 1, "7.0.1": 1}), counted.writes
    assert read_json(str(root / output_index.DIRECTORY / "7.0.1"))["stdout"] == config["stdout"]


def test_the_config_of_an_attempt_started_in_place_is_the_one_written_again(tmp_path: Path, counted: Counted) -> None:
    """Started in place on other CPUs, its config was written again: that one is the attempt's."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    config = read_json(spool.record(layout.CONFIG))
    finals: list[Any] = []
    real_write_json = cleanup_module.write_json

    def write_json_kept(path: str, record: Any, **options: Any) -> None:
        if os.path.basename(path) == cleanup_module.FINAL:
            finals.append(record)
        real_write_json(path, record, **options)

    def started_in_place(cleanup: Cleanup) -> None:
        cleanup.made_here(spool.name, config)
        cleanup.config_rewritten(spool.name, {**config, "cpu_ids": [1]})
        cleanup.config_rewritten("8.0.1", {**config, "cpu_ids": [1]})  # not made here: not kept

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cleanup_module, "write_json", write_json_kept)
        cleaned(root, spool, counted, before=started_in_place)
    assert counted.reads == Counter({layout.EXIT_STATUS: 1}), counted.reads
    assert [final["config"]["cpu_ids"] for final in finals] == [[1]]


def test_a_config_written_again_that_is_none_is_read_back(tmp_path: Path, counted: Counted) -> None:
    """Handed None (what was written is not a config), the cleanup drops the one it held and
    reads the record, as any spool's."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    config = read_json(spool.record(layout.CONFIG))

    def started_in_place(cleanup: Cleanup) -> None:
        cleanup.made_here(spool.name, {**config, "cpu_ids": [5]})
        cleanup.config_rewritten(spool.name, None)

    cleaned(root, spool, counted, before=started_in_place)
    assert counted.reads == Counter({layout.EXIT_STATUS: 1, layout.CONFIG: 1}), counted.reads


def test_the_usage_comes_with_the_exit_status_and_is_reported_apart_from_it(tmp_path: Path, counted: Counted) -> None:
    """The shepherd writes the usage inside its exit record: one record read for both, and the
    node's reports (and its final record) carry them apart, as the controller keeps them."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    controller = cleaned(root, spool, counted, before=lambda cleanup: cleanup.made_here(spool.name))
    assert layout.USAGE not in counted.reads
    (exiting,) = [m for m in controller.sent if isinstance(m, Exiting)]
    (report,) = [m for m in controller.sent if isinstance(m, Exited)]
    for message in (exiting, report):
        assert message.exit_status == OK and "usage" not in message.exit_status
        assert message.usage == USAGE and message.started_at == USAGE["started_at"]


def test_a_spool_whose_shepherd_wrote_usage_apart_is_reported_with_its_usage(tmp_path: Path, counted: Counted) -> None:
    """An attempt that ran across the node's upgrade: its shepherd, of the earlier Drover, wrote
    the usage in a record of its own. It is read once, because the exit record holds none."""
    root = tmp_path / "spool"
    spool = ended_spool(root, usage_apart=True)
    controller = cleaned(root, spool, counted, before=lambda cleanup: cleanup.made_here(spool.name))
    assert counted.reads == Counter({layout.EXIT_STATUS: 1, layout.USAGE: 1, layout.CONFIG: 1}), counted.reads
    (report,) = [m for m in controller.sent if isinstance(m, Exited)]
    assert report.exit_status == OK and report.usage == USAGE


def test_a_node_that_leaves_says_so_in_the_report_of_an_attempt_it_started_without_reading_it_back(
        tmp_path: Path, counted: Counted) -> None:
    root = tmp_path / "spool"
    spool = ended_spool(root)
    why = "node n1 left: its allocation ended"

    def leaving(cleanup: Cleanup) -> None:
        cleanup.made_here(spool.name)
        Path(spool.record(NODE_LEFT)).write_text(why)  # as Attempts marks it, then tells the cleanup
        cleanup.node_left(spool.name, why)

    controller = cleaned(root, spool, counted, before=leaving)
    assert NODE_LEFT not in counted.reads
    (report,) = [m for m in controller.sent if isinstance(m, Exited)]
    assert report.exit_status["node_left"] is True and report.exit_status["failure"] == why
    (exiting,) = [m for m in controller.sent if isinstance(m, Exiting)]
    assert exiting.exit_status["node_left"] is True


def resumed(root: Path, spool: layout.SpoolDir, counted: Counted) -> list[str]:
    """The steps a restarted node runs again on `spool`, as the writes and reports show them."""
    controller = cleaned(root, spool, counted)
    return [name for name in (cleanup_module.FINAL,) if counted.writes[name]] + [
        "report" for m in controller.sent if isinstance(m, Exited)]


def test_a_restarted_node_goes_on_after_the_final_record_that_holds_the_progress(
        tmp_path: Path, counted: Counted) -> None:
    """The final record carries the cleanup's progress (one write for both): a node killed after
    it wrote it does not write it again; it reports."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    done = ["exit_hook", "stage_out", "record"]
    write_json(spool.record(cleanup_module.FINAL), {"attempt": "7.0.1", "outcome": "END", "cleanup": {
        "done": done, "step": None, "tries": 0, "error": None}})
    write_json(spool.record(layout.CLEANUP), {"done": ["exit_hook"], "step": None, "tries": 0, "error": None})
    assert resumed(root, spool, counted) == ["report"]


def test_a_spool_of_the_earlier_layout_is_taken_up_where_its_cleanup_record_says(
        tmp_path: Path, counted: Counted) -> None:
    """A node upgraded across a restart: the earlier Drover wrote the progress in `cleanup` alone,
    and a final record without it."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    write_json(spool.record(cleanup_module.FINAL), {"attempt": "7.0.1", "outcome": "END"})
    write_json(spool.record(layout.CLEANUP), {"done": ["exit_hook", "stage_out", "record"], "step": None,
                                              "tries": 0, "error": None})
    assert resumed(root, spool, counted) == ["report"]
    spool = ended_spool(root, "7.0.2")  # and one whose record step was not done yet
    write_json(spool.record(layout.CLEANUP), {"done": ["exit_hook", "stage_out"], "step": None,
                                              "tries": 0, "error": None})
    counted.writes.clear()
    counted.reads.clear()
    assert resumed(root, spool, counted) == [cleanup_module.FINAL, "report"]


def test_the_final_record_a_kept_spool_holds_says_how_far_the_cleanup_got(tmp_path: Path) -> None:
    async def scenario() -> None:
        controller = Controller()
        cleanup = controller.cleanup = Cleanup(str(root), CleanupSettings(keep_spool=True), controller.send)
        cleanup.begin(spool)
        while cleanup.pending:
            await asyncio.sleep(0.005)

    root = tmp_path / "spool"
    spool = ended_spool(root)
    _run(scenario)
    kept = root / cleanup_module.KEPT / "7.0.1"
    final = json.loads((kept / cleanup_module.FINAL).read_text())
    assert final["outcome"] == "END" and final["exit_status"] == OK and final["usage"] == USAGE
    assert final["cleanup"]["done"] == ["exit_hook", "stage_out", "record"]
    assert read_json(str(kept / layout.CLEANUP))["done"][-2:] == ["record", "report"]


@pytest.mark.parametrize("in_memory", [True, False], ids=["in memory", "on a disk"])
def test_a_spool_of_records_alone_costs_the_same_opens_and_writes_in_memory_or_on_a_disk(
        tmp_path: Path, counted: Counted, in_memory: bool) -> None:
    root = tmp_path / "spool"
    spool = ended_spool(root)
    cleaned(root, spool, counted, before=lambda cleanup: cleanup.made_here(spool.name), in_memory=in_memory)
    assert counted.reads == Counter({layout.EXIT_STATUS: 1, layout.CONFIG: 1}), counted.reads
    assert counted.writes == Counter({cleanup_module.FINAL: 1, "7.0.1": 1}), counted.writes
    assert sum(counted.looks.values()) <= 1, counted.looks  # over_memory
    assert not os.path.exists(spool.path) and sorted(os.listdir(root)) == [output_index.DIRECTORY]


def test_a_spool_in_memory_is_recorded_and_removed_without_a_thread(tmp_path: Path, counted: Counted) -> None:
    """Its final record and the unlinks of its records cost the kernel microseconds, less than
    a hand-off to a thread and back: nothing of its cleanup goes to one."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    hand_offs: list[str] = []
    cleaned(root, spool, counted, before=lambda cleanup: cleanup.made_here(spool.name), in_memory=True,
            hand_offs=hand_offs)
    assert hand_offs == []
    assert read_json(str(root / output_index.DIRECTORY / "7.0.1"))["stdout"]


def test_a_spool_on_a_disk_is_recorded_and_removed_on_threads(tmp_path: Path, counted: Counted) -> None:
    """A disk may make a write, a flush or an unlink wait (a journal commit, a failing device):
    the event loop never does, so the final record and the removal each go to a thread."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    hand_offs: list[str] = []
    cleaned(root, spool, counted, before=lambda cleanup: cleanup.made_here(spool.name), in_memory=False,
            hand_offs=hand_offs)
    assert [name.split(".")[-1] for name in hand_offs] == ["write", "<lambda>"], hand_offs


def test_a_spool_in_memory_that_holds_a_directory_is_removed_on_a_thread(tmp_path: Path, counted: Counted) -> None:
    """A working directory (or staged-out copies) may hold any number of files: removing it may
    take long whatever the file system, so it goes to a thread, as on a disk."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    work = Path(spool.record("work"))
    work.mkdir()
    for n in range(3):
        (work / f"out.{n}").write_text("output")
    hand_offs: list[str] = []
    cleaned(root, spool, counted, before=lambda cleanup: cleanup.made_here(spool.name), in_memory=True,
            hand_offs=hand_offs)
    assert [name.split(".")[-1] for name in hand_offs] == ["<lambda>"], hand_offs
    assert not os.path.exists(spool.path) and sorted(os.listdir(root)) == [output_index.DIRECTORY]


@pytest.mark.skipif(os.geteuid() != 0, reason="gives a record to another user: needs root")
def test_a_spool_in_memory_holding_a_file_of_the_jobs_owner_is_removed_on_a_thread(
        tmp_path: Path, counted: Counted) -> None:
    """The owner's `job_script` (its path is in the job's environment) may be made writable and
    grown to any size by its owner: freeing its pages could hold the event loop for as long as
    the owner chose, so the spool goes to a thread, whatever its size now."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    script = Path(spool.record(layout.JOB_SCRIPT))
    script.write_text("#!/bin/sh\ntrue\n")
    nobody = pwd.getpwnam("nobody")
    os.chown(script, nobody.pw_uid, nobody.pw_gid)
    hand_offs: list[str] = []
    cleaned(root, spool, counted, before=lambda cleanup: cleanup.made_here(spool.name), in_memory=True,
            hand_offs=hand_offs)
    assert [name.split(".")[-1] for name in hand_offs] == ["<lambda>"], hand_offs
    assert sorted(os.listdir(root)) == [output_index.DIRECTORY]


def test_a_spool_in_memory_whose_records_hold_more_than_a_few_records_worth_is_removed_on_a_thread(
        tmp_path: Path, counted: Counted) -> None:
    root = tmp_path / "spool"
    spool = ended_spool(root)
    fd = os.open(spool.record("mail_output"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.posix_fallocate(fd, 0, FLAT_MAX_BYTES + 4096)
    finally:
        os.close(fd)
    hand_offs: list[str] = []
    cleaned(root, spool, counted, before=lambda cleanup: cleanup.made_here(spool.name), in_memory=True,
            hand_offs=hand_offs)
    assert [name.split(".")[-1] for name in hand_offs] == ["<lambda>"], hand_offs
    assert sorted(os.listdir(root)) == [output_index.DIRECTORY]


def test_a_spool_in_memory_whose_records_cannot_all_be_removed_is_removed_as_any_other(
        tmp_path: Path, counted: Counted, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unlink refused on the event loop (an immutable file) leaves the spool to the removal
    every spool has, on a thread, which goes on past it, says what is left, and is retried."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    real_unlink = os.unlink
    refused: list[str] = []

    def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        if os.path.basename(os.fsdecode(path)) == layout.CONFIG and not refused:
            refused.append(os.fsdecode(path))
            raise PermissionError(1, "Operation not permitted", path)
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    hand_offs: list[str] = []
    cleaned(root, spool, counted, before=lambda cleanup: cleanup.made_here(spool.name), in_memory=True,
            hand_offs=hand_offs)
    assert refused and [name.split(".")[-1] for name in hand_offs] == ["<lambda>"], hand_offs
    assert sorted(os.listdir(root)) == [output_index.DIRECTORY]


@pytest.mark.parametrize("in_memory", [True, False], ids=["in memory", "on a disk"])
def test_the_reserve_of_a_removed_spool_is_kept_for_the_next_attempt(
        tmp_path: Path, counted: Counted, in_memory: bool) -> None:
    """Moved aside whole rather than freed with the spool, then moved into the next attempt's
    (spool/spare_reserves.py): no record more is opened or written for it."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    make_reserve(spool)
    spares = SpareReserves(str(root))
    cleaned(root, spool, counted, before=lambda cleanup: cleanup.made_here(spool.name), in_memory=in_memory,
            spares=spares)
    assert counted.writes == Counter({cleanup_module.FINAL: 1, "7.0.1": 1}), counted.writes
    assert len(spares) == 1 and os.listdir(root / SPARES) == ["7.0.1"]
    assert sorted(os.listdir(root)) == [output_index.DIRECTORY, SPARES]


@pytest.mark.parametrize("in_memory", [True, False], ids=["in memory", "on a disk"])
def test_the_final_record_is_flushed_to_a_disk_and_not_in_memory(
        tmp_path: Path, counted: Counted, monkeypatch: pytest.MonkeyPatch, in_memory: bool) -> None:
    """On a disk it must outlive the machine: the record and its directory are flushed. tmpfs
    outlives the node daemon (the page cache is the file system) and no machine: nothing to flush."""
    root = tmp_path / "spool"
    spool = ended_spool(root)
    flushed: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (flushed.append(fd), real_fsync(fd))[-1])
    cleaned(root, spool, counted, before=lambda cleanup: cleanup.made_here(spool.name), in_memory=in_memory)
    assert len(flushed) == (0 if in_memory else 2)
