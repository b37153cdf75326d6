"""`drover up`, `drover down`, and submitting with no cluster running."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.helpers.personal import drover_in, env_for, state_dir_for_test


@pytest.fixture
def state_dir() -> Iterator[Path]:
    yield from state_dir_for_test()


def test_up_starts_a_private_cluster_and_down_stops_it(state_dir: Path) -> None:
    started = drover_in(state_dir, "up")
    assert started.returncode == 0, started.stderr
    assert "controller.log" in started.stdout and "execd.log" in started.stdout
    socket_mode = stat.S_IMODE(os.stat(state_dir / "api.sock").st_mode)
    assert socket_mode == 0o600
    assert "already running" in drover_in(state_dir, "up").stdout
    job = drover_in(state_dir, "submit", "--parsable", "--", "echo", "hi").stdout.strip()
    assert drover_in(state_dir, "wait", job).returncode == 0
    stopped = drover_in(state_dir, "down")
    assert "stopped execd" in stopped.stdout and "controller" in stopped.stdout
    assert not (state_dir / "api.sock").exists()
    status = drover_in(state_dir, "status")
    assert status.returncode == 2 and "drover up" in status.stderr
    # The history survives: a new cluster on the same state directory knows the job.
    drover_in(state_dir, "up")
    assert drover_in(state_dir, "show", "--json", job).returncode == 0


def test_submit_starts_a_cluster_when_none_runs(state_dir: Path) -> None:
    submitted = drover_in(state_dir, "submit", "--", "echo", "zero configuration")
    assert submitted.returncode == 0, submitted.stderr
    assert "started a personal cluster" in submitted.stderr
    job = submitted.stdout.split()[-1]
    assert drover_in(state_dir, "wait", job).returncode == 0
    assert (state_dir / f"drover-{job}.out").read_text() == "zero configuration\n"


def test_a_corrupt_store_is_named_with_the_next_step_and_nothing_is_left_running(state_dir: Path) -> None:
    (state_dir / "drover.db").write_bytes(os.urandom(4096))
    result = drover_in(state_dir, "up")
    assert result.returncode == 1
    assert f"the job store {state_dir / 'drover.db'} cannot be used: it is not a Drover database" in result.stderr
    assert "move it aside" in result.stderr and "Traceback" not in result.stderr
    assert not (state_dir / "api.sock").exists() and not (state_dir / "execd.pid").exists()


def test_an_execd_that_cannot_start_takes_down_the_controller_this_up_started(state_dir: Path) -> None:
    (state_dir / "not-a-directory").write_text("a file where the spool should go\n")
    (state_dir / "drover.toml").write_text(f'[execd]\nspool = "{state_dir / "not-a-directory"}"\n')
    result = drover_in(state_dir, "up")
    assert result.returncode == 1, result
    assert "the execd exited" in result.stderr and "execd.log" in result.stderr
    assert "Traceback" not in result.stderr.splitlines()[0]
    # Nothing of this `up` is left: the controller it started answered, and was stopped again.
    assert "serving on" in (state_dir / "controller.log").read_text()
    assert not (state_dir / "controller.pid").exists() and not (state_dir / "execd.pid").exists()
    assert not (state_dir / "api.sock").exists()
    status = drover_in(state_dir, "status")
    assert status.returncode == 2 and "drover up" in status.stderr


def _in_a_read_only_mount(read_only: Path, state_dir: Path, *commands: list[str]
                          ) -> list[subprocess.CompletedProcess[str]]:
    """Run each command (with `state_dir` as the state directory) with `read_only` bind-mounted
    read-only over itself, in a mount namespace of its own: the mount ends with the namespace,
    and the directory itself stays writable."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("a read-only bind mount needs root and unshare(1) (chmod does not stop root)")
    results = []
    for command in commands:
        script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
        results.append(subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script,
                                       str(read_only), *command], capture_output=True, text=True, timeout=60,
                                      env=env_for(state_dir), cwd="/"))
    return results


def test_up_on_a_read_only_state_directory_names_it_and_the_cause(state_dir: Path) -> None:
    drover = [sys.executable, "-m", "drover"]
    up, submit, controller = _in_a_read_only_mount(
        state_dir, state_dir, [*drover, "up"], [*drover, "submit", "--", "true"],
        [*drover, "controller", "--state-dir", str(state_dir)])
    for result in (up, submit):
        assert result.returncode == 1, result
        assert f"the state directory {state_dir} is on a read-only filesystem" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    # The controller started on its own says so too.
    assert controller.returncode == 1, controller
    assert f"its directory {state_dir} is on a read-only filesystem" in controller.stderr, controller.stderr
    assert "Traceback" not in controller.stderr
    assert list(state_dir.iterdir()) == []  # nothing was made, and nothing is left running


def test_a_store_on_a_read_only_filesystem_is_named_so(state_dir: Path) -> None:
    """The state directory is writable, the store's directory is not: the controller's one line
    names the store, the read-only filesystem and its directory."""
    stores = state_dir / "stores"
    stores.mkdir()
    (state_dir / "drover.toml").write_text(f'[store]\nurl = "sqlite://{stores}/drover.db"\n')
    (controller,) = _in_a_read_only_mount(stores, state_dir,
                                          [sys.executable, "-m", "drover", "controller", "--state-dir", str(state_dir)])
    assert controller.returncode == 1, controller
    assert (f"the job store {stores / 'drover.db'} cannot be used: it is on a read-only filesystem ({stores})"
            in controller.stderr), controller.stderr
    assert "Traceback" not in controller.stderr and not (state_dir / "controller.pid").exists()


def _daemons_of(state_dir: Path) -> list[int]:
    """The processes whose command line names this state directory (only this test's daemons)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                words = (Path("/proc") / entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if str(state_dir).encode() in words and b"drover" in b" ".join(words):
                found.append(int(entry))
    return found


def _settled_daemons(state_dir: Path, named: list[int]) -> list[int]:
    """This test's daemons once they are those `named`, or as they are after 10 s: a daemon the
    other starter started, which found the pid file held, may still be on its way out when both
    starters have returned; one that stays is not let go."""
    deadline = time.monotonic() + 10
    while True:
        running = sorted(_daemons_of(state_dir))
        if running == named or time.monotonic() > deadline:
            return running
        time.sleep(0.05)


def test_two_starters_at_once_leave_one_cluster_that_down_stops_whole() -> None:
    """`drover up` and a `drover submit` that starts the cluster, at the same moment, several
    times: both succeed, the pid files name the daemons that run, and `drover down` leaves
    nothing of the cluster running."""
    for _ in range(4):
        with contextlib.contextmanager(state_dir_for_test)() as state_dir:
            starters = [subprocess.Popen([sys.executable, "-m", "drover", *argv], env=env_for(state_dir),
                                         cwd=state_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                        for argv in (["up"], ["submit", "--", "true"])]
            results = [starter.communicate(timeout=60) for starter in starters]
            assert [starter.returncode for starter in starters] == [0, 0], results
            named = sorted(int((state_dir / name).read_text()) for name in ("controller.pid", "execd.pid"))
            try:
                running = _settled_daemons(state_dir, named)
                assert running == named, (running, named, results)
                stopped = drover_in(state_dir, "down")
                assert stopped.returncode == 0, stopped
                assert _daemons_of(state_dir) == []
            finally:
                for pid in _daemons_of(state_dir):  # this test's own daemons, if any outlived `down`
                    os.kill(pid, 9)
