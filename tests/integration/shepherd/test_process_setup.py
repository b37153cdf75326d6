"""Process set-up: nice from the priority, CPU affinity (a cpuset where writable), rlimits, and
the warning signal before the time limit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.integration.shepherd.test_shepherd_sequence import exit_status, make_spool

from drover.shepherd.setup import nice_for


def run(spool: Path, **env: str) -> None:
    subprocess.run([sys.executable, "-m", "drover.shepherd", str(spool)], timeout=60, env={**os.environ, **env})


@pytest.mark.parametrize(("priority", "nice"), [(0, 8), (3, 5), (8, 0), (100, 0), (-11, 19), (-500, 19)])
def test_nice_is_8_minus_the_priority_clamped(priority: int, nice: int) -> None:
    assert nice_for(priority) == nice


def test_the_job_runs_niced_on_its_cpus_with_the_nodes_rlimits(tmp_path: Path) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs to show the pinning")
    spool = make_spool(tmp_path, "ps -o ni= -p $$; grep Cpus_allowed_list /proc/self/status; ulimit -n; ulimit -c\n",
                       priority=3, cpu_ids=[1], rlimits={"nofile": 512, "core": 0})
    run(spool)
    nice, cpus, nofile, core = (tmp_path / "out.txt").read_text().split("\n")[:4]
    assert nice.strip() == "5"
    assert cpus.split()[-1] == str(sorted(os.sched_getaffinity(0))[1])
    assert nofile == "512" and core == "0"


def test_a_cpuset_keeps_the_job_from_widening_its_affinity(tmp_path: Path) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    spool = make_spool(tmp_path, "taskset -p -c 0-1 $$ > /dev/null 2>&1; grep Cpus_allowed_list /proc/self/status\n",
                       cpu_ids=[0])
    run(spool, DROVER_CONTAINMENT="cgroup-v1")
    if exit_status(spool)["exit_code"] != 0:
        pytest.skip("cgroup v1 is not usable here")
    usage = (spool / "usage").read_text()
    if '"containment":"cgroup-v1"' not in usage:
        pytest.skip("no cgroup v1 here")
    assert (tmp_path / "out.txt").read_text().split()[-1] == str(sorted(os.sched_getaffinity(0))[0])


def test_the_warning_signal_comes_before_the_time_limit(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "trap 'echo warned; exit 0' USR1; sleep 30 & wait\n",
                       time_limit_s=3, warn_signal="SIGUSR1", warn_before_s=2, kill_grace_s=0.2)
    run(spool)
    record = exit_status(spool)
    assert (tmp_path / "out.txt").read_text() == "warned\n"
    assert record["exit_code"] == 0 and not record["timed_out"]
