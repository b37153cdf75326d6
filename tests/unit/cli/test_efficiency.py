"""drover efficiency: seff's report, figure by figure, from a job as the API gives it."""

from __future__ import annotations

from typing import Any

import msgspec

from drover.cli.efficiency import report, seff_size, seff_time
from drover.protocol.api import JobInfo


def job(cpus: int = 2, memory_mib: int = 1024, array: str | None = None, **attempt: Any) -> JobInfo:
    usage = {"user_cpu_s": 50.0, "sys_cpu_s": 10.0, "max_rss_kib": 150 * 1024, "wall_s": 60.0}
    return msgspec.convert({
        "id": 12, "name": "j", "owner": "alice", "state": "completed", "submitted_at": 0.0, "priority": 0,
        "cpus": cpus, "memory_mib": memory_mib, "time_limit_s": None, "array": array, "task_counts": {},
        "workdir": "/tmp", "output": "o", "error": None,
        "tasks": [{"index": 3 if array else 0, "state": "completed", "state_since": 0.0, "attempts": [
            {"number": 1, "node": "n1", "cpu_ids": [0, 1], "dispatched_at": 0.0, "started_at": 1.0,
             "ended_at": 61.0, "exit_code": 0, "usage": usage, **attempt}]}],
    }, JobInfo)


def test_the_report_reads_as_seffs() -> None:
    info = job()
    assert report(info, info.tasks[0], "staff") == [
        "Job ID: 12", "Cluster: drover", "User/Group: alice/staff", "State: COMPLETED (exit code 0)",
        "Nodes: 1", "Cores per node: 2",
        "CPU Utilized: 00:01:00", "CPU Efficiency: 50.00% of 00:02:00 core-walltime",
        "Job Wall-clock time: 00:01:00",
        "Memory Utilized: 150.00 MB", "Memory Efficiency: 14.65% of 1.00 GB",
    ]


def test_a_cgroups_figures_win_and_one_core_and_array_tasks_read_as_seff_says_them() -> None:
    info = job(cpus=1, array="1-5", usage={"user_cpu_s": 1.0, "sys_cpu_s": 0.0, "max_rss_kib": 10,
                                           "wall_s": 100.0, "cgroup_cpu_s": 90.0,
                                           "cgroup_peak_memory_bytes": 512 * 1024 * 1024})
    lines = report(info, info.tasks[0], "alice")
    assert lines[0] == "Array Job ID: 12_3" and "Cores: 1" in lines
    assert "CPU Efficiency: 90.00% of 00:01:40 core-walltime" in lines
    assert "Memory Utilized: 512.00 MB" in lines and "Memory Efficiency: 50.00% of 1.00 GB" in lines


def test_a_job_killed_by_a_signal_and_one_without_a_memory_request() -> None:
    info = job(memory_mib=0, exit_code=None, signal=9)
    lines = report(info, info.tasks[0], "alice")
    assert "State: COMPLETED (signal 9)" in lines and "Memory Efficiency: no memory was requested" in lines


def test_a_peak_not_known_is_said_so_not_zero() -> None:
    """No cgroup measured the attempt and its max RSS is 0, not known (accounting.md, Max RSS)."""
    info = job(usage={"user_cpu_s": 1.0, "sys_cpu_s": 0.0, "max_rss_kib": 0, "wall_s": 100.0})
    lines = report(info, info.tasks[0], "alice")
    assert "Memory Utilized: n/a (not known)" in lines and "Memory Efficiency: n/a of 1.00 GB" in lines
    assert not any(line.startswith("Memory") and "0.00" in line for line in lines)


def test_times_and_sizes() -> None:
    assert seff_time(0) == "00:00:00" and seff_time(3661) == "01:01:01" and seff_time(90061) == "1-01:01:01"
    assert seff_size(512) == "512.00 KB" and seff_size(1536) == "1.50 MB" and seff_size(3 * 1024**3) == "3.00 TB"
