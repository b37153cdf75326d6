"""Grid Engine's process flow, "Communication with the execd - spooled files", on a real shepherd
run as `python -m drover.shepherd SPOOL`: the files the shepherd writes, each whole, mode 0600."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.helpers.spools import exit_status, make_spool
from tests.integration.shepherd.test_firing_as_the_owner import unique_job

STAMPED = re.compile(r"^\d{10}\.\d{6} \S")


def _run(spool: Path) -> None:
    assert subprocess.run([sys.executable, "-m", "drover.shepherd", str(spool)], timeout=60).returncode == 0


def test_gridengine_process_flow_spool_files_of_a_job_that_ran(tmp_path: Path) -> None:
    attempt = f"{unique_job()}.0.1"  # a cgroup of its own: drover/<attempt>
    spool = make_spool(tmp_path, "cat /proc/self/cgroup > cgroups\nexit 4\n", name=attempt, cpu_ids=[0],
                       node_epilog="/bin/true")
    _run(spool)
    assert exit_status(spool)["exit_code"] == 4
    for name in ("pid", "job_pid", "environment", "trace", "exit_status", "osjobid",
                 "processor_set_number", "shepherd_about_to_exit"):
        assert (spool / name).stat().st_mode & 0o777 == 0o600, name  # the shepherd's; `config` is the node's
    # osjobid: "the operating system jobid used to control and monitor the job": the cgroups the
    # job was in (the job's own /proc/self/cgroup names them), or the subreaper.
    osjobid = (spool / "osjobid").read_text()
    assert osjobid.endswith("\n") and len(osjobid.splitlines()) == 1
    if osjobid.startswith("subreaper "):
        assert int(osjobid.split()[1]) == int((spool / "pid").read_text().split()[0])
    else:
        member_of = [line.split(":", 2)[2] for line in (tmp_path / "cgroups").read_text().splitlines()]
        for path in osjobid.split():
            # The attempt's own cgroups, and its slot's cpuset (kept between attempts: slots.py).
            assert path.startswith("/sys/fs/cgroup/")
            assert path.endswith(f"/{attempt}") or os.path.basename(path).startswith("slot-"), path
            assert any(path.endswith(inside) for inside in member_of if inside != "/"), member_of
    # processor_set_number: the CPUs the attempt was given (the first usable one).
    assert (spool / "processor_set_number").read_text().split()[0] == str(min(os.sched_getaffinity(0)))
    # shepherd_about_to_exit: written before exit_status, once the epilogs are done.
    assert (spool / "shepherd_about_to_exit").stat().st_mtime_ns <= (spool / "exit_status").stat().st_mtime_ns
    # trace: every step, each with its time, in the order they happened.
    trace = (spool / "trace").read_text().splitlines()
    assert all(STAMPED.match(line) for line in trace), trace
    steps = [line.split(" ", 1)[1] for line in trace]
    expected = ["shepherd started", "config read", "containment ", "environment built", "working directory ",
                "output files opened", "job started", "job ended", "node epilog started", "node epilog exited 0",
                "output staged out", "about to exit"]
    found = [next(i for i, step in enumerate(steps) if step.startswith(prefix)) for prefix in expected]
    assert found == sorted(found), steps
    times = [float(line.split()[0]) for line in trace]
    assert times == sorted(times), trace


def test_gridengine_process_flow_spool_files_error_when_the_job_cannot_start(tmp_path: Path) -> None:
    """"error: Contains an error message in case of severe errors during the startup of a job";
    the trace says how far it got, and shepherd_about_to_exit still comes before exit_status."""
    spool = make_spool(tmp_path, "true\n", name=f"{unique_job()}.0.1", workdir=str(tmp_path / "missing"), cpu_ids=[])
    _run(spool)
    error = (spool / "error").read_text()
    assert error.startswith(f"cannot enter {tmp_path / 'missing'}")
    trace = (spool / "trace").read_text()
    assert "config read" in trace and "cannot enter" in trace and "job started" not in trace
    assert (spool / "shepherd_about_to_exit").exists() and exit_status(spool)["failure"] == error.splitlines()[0]
    assert not (spool / "processor_set_number").exists()  # no CPUs were given: no processor set
    assert not (spool / "job_pid").exists()
