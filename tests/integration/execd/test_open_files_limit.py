"""A node daemon started with a low soft limit of open files (systemd's 1024 for services) raises
it to the hard limit for itself and its fork server, which hold a few descriptors per running
attempt; the jobs it runs, and the site's exit hook, get the limit it was started with back
(drover/open_files.py)."""

from __future__ import annotations

import resource
from pathlib import Path

import psutil
import pytest
from tests.helpers.cluster import LocalCluster

LOW = 1024


def open_files_limits(pid: int) -> tuple[int, int]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError(f"no open files limit in /proc/{pid}/limits")


def test_the_node_daemon_raises_its_open_files_limit_and_its_jobs_get_the_one_it_started_with(
        tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard <= LOW:
        pytest.skip(f"the hard limit of open files here ({hard}) leaves nothing to raise above {LOW}")
    hook, hooked = tmp_path / "hook.sh", tmp_path / "hook.limits"
    hook.write_text(f"#!/bin/sh\ncat > /dev/null\necho $(ulimit -Sn) $(ulimit -Hn) >> {hooked}\n")
    hook.chmod(0o755)
    cluster = LocalCluster(config_toml=f"[execd]\nexit_hook = \"{hook}\"\n")
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (LOW, hard))  # what the daemons are started with
        try:
            cluster.start()
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert cluster.execd is not None and cluster.controller is not None
        execd = psutil.Process(cluster.execd.pid)
        (fork_server,) = [child for child in execd.children()
                          if "drover.execd.forkserver" in " ".join(child.cmdline())]
        assert open_files_limits(execd.pid) == (hard, hard)
        assert open_files_limits(fork_server.pid) == (hard, hard)
        assert open_files_limits(cluster.controller.pid) == (hard, hard)
        job = cluster.submit("--", "sh", "-c", "ulimit -Sn; ulimit -Hn")
        assert cluster.drover("wait", str(job)).returncode == 0
        assert (cluster.workdir / f"drover-{job}.out").read_text().split() == [str(LOW), str(hard)]
        assert hooked.read_text().split() == [str(LOW), str(hard)]
    finally:
        assert not cluster.stop()
