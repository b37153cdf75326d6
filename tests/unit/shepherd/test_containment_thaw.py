"""Each containment backend knows whether it froze the attempt: its thaw lets go only what its
freeze stopped, so a terminate or a resume of a job nothing froze leaves it as it is (the
subreaper's thaw is a SIGCONT to every process of the job: a job stopped by its own means, or
by a configured suspend method, is not woken by it)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.wait import wait_until

from drover.shepherd.containment.fallback import Subreaper, _descendants
from drover.shepherd.containment.v1 import CgroupV1
from drover.shepherd.containment.v2 import CgroupV2


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


@pytest.fixture
def job() -> Iterator[tuple[int, int]]:
    """A shell (standing for the shepherd) and its child, the job's one process."""
    shell = subprocess.Popen(["/bin/sh", "-c", "sleep 120 & wait"], process_group=0)
    try:
        (child,) = wait_until(lambda: _descendants(shell.pid), describe="the job's process")
        yield shell.pid, child
    finally:
        os.killpg(shell.pid, signal.SIGKILL)
        shell.wait()


def test_the_subreaper_sends_sigcont_only_to_a_job_it_stopped(job: tuple[int, int]) -> None:
    shell, child = job
    subreaper = Subreaper()
    subreaper.me = shell
    os.kill(child, signal.SIGSTOP)  # stopped by other means than the subreaper's freeze
    wait_until(lambda: _state(child) == "T", describe="the job stopped")
    subreaper.thaw()
    assert _state(child) == "T"  # a SIGCONT would have woken it before kill(2) returned
    subreaper.freeze()
    subreaper.thaw()
    wait_until(lambda: _state(child) != "T", describe="the job let go")
    os.kill(child, signal.SIGSTOP)
    wait_until(lambda: _state(child) == "T", describe="the job stopped again")
    subreaper.thaw()  # thawed once already
    assert _state(child) == "T"


def _control_file(path: Path) -> str:
    path.write_text("-")  # what the backend writes replaces it
    return str(path)


def test_the_cgroup_freezers_are_thawed_only_once_frozen(tmp_path: Path) -> None:
    v2 = CgroupV2(str(tmp_path), str(tmp_path), 0)
    v1 = CgroupV1({"freezer": str(tmp_path)}, {"freezer": str(tmp_path)}, 0)
    for backend, name, thawed in ((v2, "cgroup.freeze", "0"), (v1, "freezer.state", "THAWED")):
        control = Path(_control_file(tmp_path / name))
        backend.thaw()
        assert control.read_text() == "-", backend.name  # never frozen: nothing written
        backend.freeze()
        backend.thaw()
        assert control.read_text() == thawed, backend.name
        _control_file(control)
        backend.thaw()  # thawed already
        assert control.read_text() == "-", backend.name
