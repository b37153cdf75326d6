"""Containment: an escaping job leaves no survivors; suspend freezes escapees too; memory limits
end in OUT_OF_MEMORY. Each backend this host can run is tested; the others skip, saying why."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from tests.helpers.attempt_config import CLUSTER
from tests.helpers.attempts import backend_unusable
from tests.helpers.spools import exit_status, make_spool, usage
from tests.helpers.wait import wait_until

ESCAPING = """
sleep 300 &
setsid sleep 300 &
( ( sleep 300 & ) & )
nohup sleep 300 > /dev/null 2>&1 &
trap '' TERM; (trap '' TERM; sleep 300) &
( while :; do sleep 300 & sleep 0.01; done ) &
sleep 0.3
exit 0
"""


def run_shepherd(spool: Path, backend: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "drover.shepherd", str(spool)], start_new_session=True,
                            env={**os.environ, "DROVER_CONTAINMENT": backend})


def sleepers(seconds: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if process.info["cmdline"] == ["sleep", seconds]:
            found.append(process)
    return found


def test_an_escaping_job_leaves_no_survivors(tmp_path: Path, backend: str) -> None:
    import uuid

    # Its sleeps' own duration: another test's `sleep 300`, running meanwhile, is no survivor of this job.
    seconds = f"300.{uuid.uuid4().int % 10**9:09d}"
    spool = make_spool(tmp_path, ESCAPING.replace("sleep 300", f"sleep {seconds}"))
    assert run_shepherd(spool, backend).wait(timeout=60) == 0
    assert exit_status(spool)["exit_code"] == 0
    survivors = [p for p in sleepers(seconds) if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert survivors == []
    assert usage(spool)["containment"] == backend


def test_suspend_stops_escaped_processes_too_and_resume_continues_them(tmp_path: Path, backend: str) -> None:
    spool = make_spool(tmp_path, "setsid bash -c 'while :; do echo tick >> ticks; sleep 0.05; done' &\nsleep 30\n")
    shepherd = run_shepherd(spool, backend)
    ticks = tmp_path / "ticks"
    wait_until(lambda: ticks.exists() and len(ticks.read_text().split()) > 3, describe="ticking")
    shepherd.send_signal(signal.SIGTSTP)
    import time

    time.sleep(0.3)  # let a tick that was under way land
    frozen_count = len(ticks.read_text().split())
    time.sleep(0.5)
    assert len(ticks.read_text().split()) == frozen_count, "an escaped process kept running while suspended"
    shepherd.send_signal(signal.SIGCONT)
    wait_until(lambda: len(ticks.read_text().split()) > frozen_count + 2, describe="ticking again")
    shepherd.send_signal(signal.SIGTERM)
    shepherd.wait(timeout=30)
    assert exit_status(spool)["terminated"]


def test_a_job_over_its_memory_limit_ends_out_of_memory_even_if_its_shell_exits_0(tmp_path: Path) -> None:
    why_not = backend_unusable("cgroup-v1")
    v2_memory = "memory" in (Path("/sys/fs/cgroup/cgroup.controllers").read_text() if Path("/sys/fs/cgroup/cgroup.controllers").exists() else "")
    if why_not and not v2_memory:
        pytest.skip(f"no memory cgroup is writable here ({why_not})")
    spool = make_spool(tmp_path, "python3 -c 'b = bytearray(400 * 1024 * 1024); print(len(b))'\nexit 0\n",
                       memory_mib=100)
    assert subprocess.run([sys.executable, "-m", "drover.shepherd", str(spool)], timeout=60).returncode == 0
    record = exit_status(spool)
    assert record["out_of_memory"] is True
    assert 90 * 2**20 <= usage(spool)["cgroup_peak_memory_bytes"] <= 101 * 2**20


def test_no_cgroup_is_left_behind(tmp_path: Path, backend: str) -> None:
    spool = make_spool(tmp_path, "sleep 0.1 &\n", name="9.0.1")
    run_shepherd(spool, backend).wait(timeout=30)
    # Walked so that other tests' cgroups may come and go meanwhile (rglob fails on one that went);
    # only this process's cluster's: a test running beside this one may have an attempt 9.0.1 too.
    leftovers = [os.path.join(where, name) for where, dirs, _ in os.walk("/sys/fs/cgroup") for name in dirs
                 if name == "9.0.1" and f"drover-{CLUSTER}" in where.split(os.sep)]
    assert leftovers == []


# Forks sleepers until a fork fails, then says how many it made and exits 0 (a fork bomb that
# stops by itself: the shepherd's kill of the attempt's cgroup ends the sleepers).
FORK_BOMB = """python3 - <<'PY'
import os, time
made = 0
while made < 5000:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(300)
        os._exit(0)
    made += 1
print(made, flush=True)
PY
"""


def pids_controller_unusable(backend: str) -> str | None:
    """None where the backend gives an attempt a process limit here, else why not."""
    from drover.shepherd.containment import choose

    os.environ["DROVER_CONTAINMENT"] = backend
    try:
        made = choose("probe.0.2", 0, pids_max=64, cluster=CLUSTER)  # its cgroups where the run clears them
    finally:
        del os.environ["DROVER_CONTAINMENT"]
    try:
        return None if made.pids_limit == 64 else f"{backend} has no writable pids controller here"
    finally:
        made.remove()


def test_a_fork_bomb_stops_at_the_process_limit_and_the_hosts_other_jobs_fork_on(tmp_path: Path, backend: str) -> None:
    """1. A job that forks without end runs under pids_max 64. 2. Its forks fail at the limit: it
    made fewer than 64 processes, and its exit record says it hit the limit (its shell exits 0).
    3. Another job, started alongside and let go once the first is stopped, forks 200 processes
    and succeeds: the bomb took none of the host's pids from it. Nothing of either is left."""
    why_not = pids_controller_unusable(backend)
    if why_not:
        pytest.skip(why_not)
    gate = tmp_path / "go"
    other = make_spool(tmp_path / "other", f"while [ ! -e {gate} ]; do sleep 0.05; done\n"
                       "for i in $(seq 1 200); do sleep 0.5 & done; wait; echo forked 200\n", name="8.0.1",
                       workdir=str(tmp_path), stdout=str(tmp_path / "other.out"))
    bystander = run_shepherd(other, backend)
    try:
        bomb = make_spool(tmp_path / "bomb", FORK_BOMB, pids_max=64, workdir=str(tmp_path),
                          stdout=str(tmp_path / "bomb.out"))
        assert run_shepherd(bomb, backend).wait(timeout=120) == 0
        record = exit_status(bomb)
        assert record["exit_code"] == 0 and record["pids_max"] == 64 and record["pids_refused"] >= 1
        assert 0 < int((tmp_path / "bomb.out").read_text()) < 64
        assert "process limit:" in (bomb / "trace").read_text()
        gate.touch()
        assert bystander.wait(timeout=120) == 0
    finally:
        if bystander.poll() is None:
            bystander.kill()
            bystander.wait()
    assert exit_status(other)["exit_code"] == 0 and "pids_refused" not in exit_status(other)
    assert (tmp_path / "other.out").read_text() == "forked 200\n"


def devices_controller_unusable() -> str | None:
    """None where a v1 devices cgroup denies an attempt the node's GPUs here, else why not."""
    from drover.shepherd.containment import v1

    made = v1.create("probe.0.3", 0, hidden_gpus=[1])
    if made is None:
        return "no writable cgroup v1 (freezer and memory) here"
    try:
        return None if made.hidden_gpus == [1] else "no writable devices cgroup here"
    finally:
        made.remove()


def test_the_node_gpus_an_attempt_was_not_given_are_denied_by_its_devices_cgroup(tmp_path: Path) -> None:
    """A job whose node has GPUs 0, 1 and 2 and that was given GPU 1 cannot open /dev/nvidia0 nor
    /dev/nvidia2 (char 195:0 and 195:2, made here), root though it is; GPU 1's it can."""
    why_not = devices_controller_unusable()
    if why_not:
        pytest.skip(why_not)
    for index in range(3):
        os.mknod(tmp_path / f"nvidia{index}", 0o666 | stat.S_IFCHR, os.makedev(195, index))
    # ENXIO: the cgroup let the open through and no driver answered; EPERM: the cgroup denied it.
    script = (f"python3 - <<'PY' > {tmp_path}/seen\nimport errno, os\nfor i in range(3):\n"
              f"    try:\n        os.open('{tmp_path}/nvidia%d' % i, os.O_RDWR)\n"
              "    except OSError as error:\n        print(errno.errorcode[error.errno])\nPY\n")
    spool = make_spool(tmp_path / "spool", script, node_gpus=3, gres={"gpu": [1]})
    assert run_shepherd(spool, "cgroup-v1").wait(timeout=60) == 0
    assert (tmp_path / "seen").read_text().split() == ["EPERM", "ENXIO", "EPERM"]
    assert "GPUs 0,2 of the node denied (devices cgroup)" in (spool / "trace").read_text()


# Where a cgroup of the attempt's name is left over (an earlier life of the name: a cluster whose
# state was started again from job 1, a clean-up that could not remove it), and the state that
# life left in it, which a fresh attempt must not inherit.
LEFT_OVER = {
    "cgroup-v1": ("memory", "memory.limit_in_bytes", str(16 * 2**20)),  # 16 MiB
    "cgroup-v2": ("", "cgroup.freeze", "1"),  # frozen
}


@pytest.mark.parametrize("backend", sorted(LEFT_OVER))
def test_an_attempt_takes_no_limit_or_state_from_a_cgroup_of_its_name_left_over(tmp_path: Path, backend: str) -> None:
    from drover.shepherd.containment import v2
    from drover.shepherd.containment.common import own_cgroup

    why_not = backend_unusable(backend)
    if why_not:
        pytest.skip(why_not)
    controller, knob, value = LEFT_OVER[backend]
    mount = os.path.join("/sys/fs/cgroup", controller) if controller else v2._mount()
    own = own_cgroup(controller)
    assert mount is not None and own is not None
    left = Path(mount, own.lstrip("/"), f"drover-{CLUSTER}", "6.0.1")
    left.mkdir(parents=True)
    try:
        (left / knob).write_text(value)
        spool = make_spool(tmp_path, "python3 -c 'b = bytearray(64 * 1024 * 1024); print(len(b))'\n", name="6.0.1")
        shepherd = run_shepherd(spool, backend)
        try:
            assert shepherd.wait(timeout=30) == 0
        finally:
            if shepherd.poll() is None:  # hung in the frozen cgroup: thawed, then ended
                (left / knob).write_text("0")
                os.killpg(shepherd.pid, signal.SIGKILL)
                shepherd.wait()
        assert exit_status(spool)["exit_code"] == 0 and not exit_status(spool)["out_of_memory"]
    finally:
        if left.exists():
            if knob == "cgroup.freeze":
                (left / knob).write_text("0")
            left.rmdir()


@pytest.mark.parametrize("backend", sorted(LEFT_OVER))
def test_an_attempt_whose_cgroup_is_left_over_with_a_process_in_it_fails_saying_so(tmp_path: Path, backend: str) -> None:
    """Where the left-over cgroup cannot be removed (a process of that earlier life is in it),
    the attempt does not run without its containment: it fails, naming the cgroup, and nothing
    of it is left in the hierarchy."""
    from drover.shepherd.containment import v2
    from drover.shepherd.containment.common import own_cgroup

    why_not = backend_unusable(backend)
    if why_not:
        pytest.skip(why_not)
    controller = "freezer" if backend == "cgroup-v1" else ""
    mount = os.path.join("/sys/fs/cgroup", controller) if controller else v2._mount()
    own = own_cgroup(controller)
    assert mount is not None and own is not None
    left = Path(mount, own.lstrip("/"), f"drover-{CLUSTER}", "6.0.2")
    left.mkdir(parents=True)
    earlier = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        (left / "cgroup.procs").write_text(str(earlier.pid))
        spool = make_spool(tmp_path, "echo ran\n", name="6.0.2")
        assert run_shepherd(spool, backend).wait(timeout=30) != 0
        failure = exit_status(spool)["failure"]
        assert f"the cgroup {left} is left from an earlier attempt of the name, with processes in it" in failure
        assert not (tmp_path / "out.txt").exists() or "ran" not in (tmp_path / "out.txt").read_text()
        made = [os.path.join(where, name) for where, dirs, _ in os.walk("/sys/fs/cgroup") for name in dirs
                if name == "6.0.2" and f"drover-{CLUSTER}" in where.split(os.sep)]
        assert made == [str(left)]
    finally:
        earlier.kill()
        earlier.wait()
        wait_until(lambda: not (left / "cgroup.procs").read_text().strip(), describe="the sleep gone from its cgroup")
        left.rmdir()
