"""DROVER_DEBUG_SHEPHERD (Accelerator firing sequence, step 10: "If VOV_DEBUG_TASKER is set, the
subtasker sleeps 10 seconds (to allow connection of a debugger)")."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
from tests.helpers.cluster import LocalCluster
from tests.helpers.spools import exit_status, make_spool
from tests.helpers.wait import wait_until

LINE = re.compile(r"drover shepherd (\S+): pid (\d+) waits ([0-9.]+)s for a debugger")


def test_accelerator_step_10_each_shepherd_waits_for_a_debugger_with_its_pid_in_the_nodes_log() -> None:
    """1. an execd started with DROVER_DEBUG_SHEPHERD=3; 2. a job submitted; 3. its shepherd's
    pid appears in the execd's log while the job has not started, and that process is alive
    (a debugger could attach to it); 4. the job then runs to its end."""
    cluster = LocalCluster()
    try:
        cluster.start_controller()
        cluster.start_execd(DROVER_DEBUG_SHEPHERD="3")
        log = cluster.state_dir / "execd.log"
        job = cluster.submit("--", "echo", "ran")
        found = wait_until(lambda: LINE.search(log.read_text()), describe="the shepherd's pid in the execd's log")
        assert found is not None
        attempt, pid = found.group(1), int(found.group(2))
        assert attempt == f"{job}.0.1" and found.group(3) == "3"
        assert psutil.Process(pid).is_running()
        assert cluster.drover_json("show", str(job))["state"] == "dispatched"
        assert cluster.drover("wait", str(job)).returncode == 0
        assert (cluster.workdir / f"drover-{job}.out").read_text() == "ran\n"
        assert f"drover shepherd {attempt}: pid {pid} goes on" in log.read_text()
    finally:
        assert not cluster.stop()


def test_accelerator_step_10_a_stop_ends_the_wait_and_the_job_never_starts(tmp_path: Path) -> None:
    spool = make_spool(tmp_path, "echo ran\n", debug_pause_s=600.0)
    shepherd = subprocess.Popen([sys.executable, "-m", "drover.shepherd", str(spool)], stderr=subprocess.PIPE,
                                start_new_session=True)
    assert shepherd.stderr is not None
    said = shepherd.stderr.readline().decode()
    assert LINE.search(said) and f"pid {shepherd.pid} waits 600s" in said
    began = time.monotonic()
    shepherd.terminate()
    shepherd.wait(timeout=30)
    shepherd.stderr.close()
    assert time.monotonic() - began < 20
    record = exit_status(spool)
    assert record["failure"] == "stopped before the job started (a stop came first)"
    assert not (tmp_path / "out.txt").exists() or (tmp_path / "out.txt").read_text() == ""
