"""Sampling on the node: the rings keep their bounds and downsample; the cgroup readers read v2
and v1 counters (fake cgroup directories here); the process reader sums a real process tree
and tolerates processes that vanish; a round sends one message for every running attempt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from drover.execd.attempts import LiveAttempt
from drover.execd.cgroup_usage import read_cgroup, read_v1, read_v2
from drover.execd.process_usage import descendants, read_processes
from drover.execd.sample_history import LONG, LONG_EVERY, SHORT, SampleHistory
from drover.execd.sampling import Sampler
from drover.protocol.node_channel import Sample, Samples
from drover.spool import layout

MIB = 1 << 20


def sample(n: int, memory: int = 0, cpu: float = 0.0) -> Sample:
    return Sample(attempt="1.0.1", at=float(n), memory_bytes=memory, rss_bytes=memory, peak_bytes=memory, cpu=cpu,
                  cpu_average=cpu, memory_average_bytes=memory, processes=1, threads=1)


def test_the_rings_keep_their_bounds_and_the_long_one_every_tenth_sample() -> None:
    history = SampleHistory()
    taken = LONG * LONG_EVERY + 123
    for n in range(taken):
        history.add(sample(n, memory=n, cpu=1.0))
    assert len(history.short) == SHORT and [s.at for s in history.short] == [float(n) for n in range(taken - SHORT, taken)]
    assert len(history.long) == LONG
    assert all(int(s.at) % LONG_EVERY == 0 for s in history.long)
    assert history.long[-1].at == float((taken - 1) // LONG_EVERY * LONG_EVERY)
    # Peak and averages are over every sample, not only those the rings still hold.
    assert history.peak_bytes == taken - 1 and history.memory_average_bytes == (taken - 1) // 2
    assert history.cpu_average == pytest.approx(1.0) and history.latest is history.short[-1]


def test_the_peak_is_the_nodes_largest_figure() -> None:
    history = SampleHistory()
    history.add(sample(0, memory=5 * MIB))
    history.add(sample(1, memory=2 * MIB))
    assert history.peak_bytes == 5 * MIB and history.latest is not None and history.latest.memory_bytes == 2 * MIB


def _files(directory: Path, files: dict[str, str]) -> str:
    directory.mkdir(parents=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    return str(directory)


def test_cgroup_v2_counters(tmp_path: Path) -> None:
    path = _files(tmp_path / "1.0.1", {
        "memory.current": "104857600\n", "memory.peak": "209715200\n", "cgroup.procs": "12\n34\n",
        "cpu.stat": "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n",
    })
    figures = read_v2(path)
    assert (figures.memory_bytes, figures.peak_bytes, figures.cpu_s, figures.pids) == (100 * MIB, 200 * MIB, 2.5, [12, 34])


def test_cgroup_v2_without_the_memory_controller(tmp_path: Path) -> None:
    path = _files(tmp_path / "1.0.1", {"cgroup.procs": "", "cpu.stat": "usage_usec 10\n"})
    figures = read_v2(path)
    assert (figures.memory_bytes, figures.peak_bytes, figures.cpu_s, figures.pids) == (None, None, 1e-5, [])


def test_cgroup_v1_counters(tmp_path: Path) -> None:
    paths = {
        "memory": _files(tmp_path / "memory", {"memory.usage_in_bytes": str(64 * MIB),
                                               "memory.max_usage_in_bytes": str(96 * MIB), "cgroup.procs": "7\n"}),
        "cpuacct": _files(tmp_path / "cpuacct", {"cpuacct.usage": "1500000000\n", "cgroup.procs": "7\n"}),
        "freezer": _files(tmp_path / "freezer", {"cgroup.procs": "7\n8\n"}),
    }
    figures = read_v1(paths)
    assert (figures.memory_bytes, figures.peak_bytes, figures.cpu_s, figures.pids) == (64 * MIB, 96 * MIB, 1.5, [7, 8])


def test_a_cgroup_removed_while_it_is_read_reads_as_nothing(tmp_path: Path) -> None:
    figures = read_v2(str(tmp_path / "gone"))
    assert (figures.memory_bytes, figures.peak_bytes, figures.cpu_s, figures.pids) == (None, None, None, None)


def test_only_cgroups_under_the_cgroup_mount_are_read() -> None:
    assert read_cgroup(None) is None
    assert read_cgroup({"backend": "subreaper", "cgroups": {}, "shepherd": 1, "session": 1}) is None
    assert read_cgroup({"backend": "cgroup-v2", "cgroups": {"": "/etc"}, "shepherd": 1, "session": 1}) is None


def test_descendants_from_a_parent_map() -> None:
    parent_of = {10: 1, 11: 10, 12: 11, 13: 10, 20: 1, 21: 20, 30: 31, 31: 30}
    assert sorted(descendants(10, parent_of)) == [11, 12, 13]
    assert descendants(99, parent_of) == [] and sorted(descendants(30, parent_of)) == [31]


def test_processes_are_summed_and_the_biggest_names_the_command() -> None:
    holder = subprocess.Popen([sys.executable, "-c", "import time\nb = b'x' * (48 << 20)\nprint(1, flush=True)\n"
                               "time.sleep(30)"], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline()
        figures = read_processes([holder.pid, 2**22 + 7])  # the second never existed: not counted
        assert figures.processes == 1 and figures.threads >= 1 and figures.rss_bytes >= 48 * MIB
        assert "time.sleep(30)" in figures.cmd and "\n" not in figures.cmd
        assert figures.read_bytes is not None  # our own child: its I/O counters are ours to read
    finally:
        holder.kill()
        holder.wait()
    assert read_processes([holder.pid]).processes == 0  # gone (and reaped): nothing


def test_a_round_sends_one_message_for_every_running_attempt(tmp_path: Path) -> None:
    sent: list[Any] = []
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    live: dict[str, LiveAttempt] = {}
    try:
        for name in ("1.0.1", "2.0.1", "3.0.1"):
            spool = layout.SpoolDir(str(tmp_path), name)
            os.mkdir(spool.path)
            if name != "3.0.1":  # the third has not started its job yet
                Path(spool.record(layout.JOB_PID)).write_text(f"{spin.pid}\n")
            # No cgroup: the attempt's processes are its shepherd's descendants (this process's).
            Path(spool.record(layout.CONTAINMENT)).write_text(json.dumps(
                {"backend": "subreaper", "cgroups": {}, "shepherd": os.getpid(), "session": os.getsid(0)}))
            live[name] = LiveAttempt(spool, os.getpid(), started_sent=name != "3.0.1")
        now = [0.0]
        sampler = Sampler(live, sent.append, 1.0, clock=lambda: now[0])
        now[0] = os.stat(live["1.0.1"].spool.record(layout.JOB_PID)).st_mtime + 1.0
        spun = psutil.Process(spin.pid)
        before_first = sum(spun.cpu_times()[:2])
        first = sampler.round()
        after_first = sum(spun.cpu_times()[:2])
        assert len(sent) == 1 and isinstance(sent[0], Samples) and sent[0].samples == first
        assert sorted(s.attempt for s in first) == ["1.0.1", "2.0.1"]
        time.sleep(0.5)
        now[0] += 0.5
        before_second = sum(spun.cpu_times()[:2])
        second = sampler.round()
        after_second = sum(spun.cpu_times()[:2])
        assert all(s.processes >= 1 and s.cpu and s.cmd for s in second)
        # The spinning child's CPU over the round's 0.5 s: what the kernel says it used between
        # the two rounds' reads (about one core on an idle host, less on a loaded one).
        least, most = (before_second - after_first) / 0.5, (after_second - before_first) / 0.5
        assert least > 0 and all(least - 0.05 <= s.cpu <= most + 0.05 for s in second), (second, least, most)
        history = sampler.history("1.0.1")
        assert history is not None and len(history.short) == 2

        del live["1.0.1"], live["2.0.1"]  # they ended: forgotten, and the controller told once
        assert sampler.round() == [] and sent[-1] == Samples([]) and sampler.history("1.0.1") is None
        sampler.round()
        assert len(sent) == 3  # nothing more to say
    finally:
        spin.kill()
        spin.wait()


# A shepherd that once ran a job which used a second of CPU, reaped it (its children's times hold
# that second) and holds 64 MiB of its own; then it sits in the next attempt's cgroup, beside that
# attempt's job, while it starts it.
SHEPHERD = """
import subprocess, sys, time
subprocess.run([sys.executable, "-c", "import time\\nend = time.process_time() + 1.0\\nwhile time.process_time() < end: pass"])
held = b"x" * (64 << 20)
print(1, flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("counted", [False, True], ids=["processes-counted", "cgroup-counted"])
def test_the_shepherd_in_its_attempts_cgroup_is_not_one_of_the_attempts_processes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: bool) -> None:
    """The cgroup lists the shepherd and the job: the sample is the job's alone, its CPU (where
    the cgroup does not count it), memory, processes and command; not the shepherd's, whose
    children's CPU is an earlier attempt's job's."""
    from drover.execd import sampling
    from drover.execd.cgroup_usage import CgroupFigures

    shepherd = subprocess.Popen([sys.executable, "-c", SHEPHERD], stdout=subprocess.PIPE)
    job = subprocess.Popen(["sleep", "60.5"])
    try:
        assert shepherd.stdout is not None and shepherd.stdout.readline()
        assert psutil.Process(shepherd.pid).cpu_times().children_user + psutil.Process(
            shepherd.pid).cpu_times().children_system >= 0.9
        spool = layout.SpoolDir(str(tmp_path), "4.0.1")
        os.mkdir(spool.path)
        Path(spool.record(layout.JOB_PID)).write_text(f"{job.pid}\n")
        Path(spool.record(layout.CONTAINMENT)).write_text(json.dumps(
            {"backend": "cgroup-v2", "cgroups": {"": "/sys/fs/cgroup/drover-t/4.0.1"}, "shepherd": shepherd.pid,
             "session": os.getsid(0)}))
        # What the cgroup's files say (their reading is tested above): both processes listed;
        # its own memory and CPU counters, where it has them, are the job's few pages and none.
        listed = CgroupFigures(4 * MIB if counted else None, None, 0.0 if counted else None, [shepherd.pid, job.pid])
        monkeypatch.setattr(sampling, "read_cgroup", lambda record: listed if record is not None else None)
        live = {spool.name: LiveAttempt(spool, shepherd.pid, started_sent=True)}
        started = os.stat(spool.record(layout.JOB_PID)).st_mtime
        sampler = Sampler(live, lambda message: None, 1.0, clock=lambda: started + 2.0)
        (taken,) = sampler.round()
        assert taken.processes == 1 and taken.cmd == "sleep 60.5"
        assert taken.rss_bytes < 32 * MIB and taken.cpu_average < 0.2 and taken.cpu < 0.2
        if not counted:
            assert taken.memory_bytes < 32 * MIB
    finally:
        for process in (shepherd, job):
            process.kill()
            process.wait()
