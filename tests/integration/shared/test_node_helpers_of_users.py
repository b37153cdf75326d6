"""The root node daemon reads a user's output files through a helper that runs as that user
(owner_process.py). The user owns that helper: they can stop it, and, were it dumpable, trace it
or open its pipes through /proc and keep them open. None of that may hold the daemon up for
anyone else: the helper is not dumpable, each request has a deadline past which the daemon
closes its side of the pipes and kills the helper, and nothing of the daemon's waits on a thread
that a helper could hold.

Real users on a shared cluster started the way docs/shared-machine.md says, asking for their output through the
API as `drover logs` does for a job on another host; what a user cannot do (hold the pipe open
from a process of their own, as a tracer could) is done for them by root, here in the test."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import shutil
import signal
import struct
import subprocess
import tempfile
import termios
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from tests.helpers.system_cluster import SystemCluster
from tests.helpers.users import create_user, remove_user, user_command
from tests.helpers.wait import wait_until

DEADLINE_S = 10.0  # execd/relays.py READ_TIMEOUT_S: a read that takes longer fails

# Run as a user with the install's python: ask the controller for the output of task 0 of JOB,
# read by the node; print what came back and how long it took.
ASK = """
import json, os, sys, time
from drover.client import Client
started = time.monotonic()
try:
    with Client(os.environ["DROVER_SOCKET"], timeout_s=120) as api:
        chunk = api.output(int(sys.argv[1]), 0)
    outcome = {"data": chunk.data.decode(errors="replace")}
except Exception as error:
    outcome = {"error": str(error)}
outcome["seconds"] = time.monotonic() - started
print(json.dumps(outcome))
"""

# Run as a user: find their own output reader, and try to reach into it (trace it; reopen its
# stdout through /proc, as a process that keeps the pipe open would).
PROBE = """
import ctypes, errno, json, os, sys
me = os.getuid()
found = []
for entry in os.listdir("/proc"):
    if not entry.isdigit():
        continue
    try:
        with open(f"/proc/{entry}/status") as status:
            uid = next(int(l.split()[1]) for l in status if l.startswith("Uid:"))
        with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
            command = cmdline.read()
    except (OSError, StopIteration):
        continue
    if uid == me and b"The output reader" in command and int(entry) != os.getpid():
        found.append(int(entry))
assert len(found) == 1, found
pid = found[0]
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
outcome = {"pid": pid}
if libc.ptrace(16, pid, None, None) == 0:  # PTRACE_ATTACH
    outcome["ptrace"] = "attached"
    os.waitpid(pid, 0x40000000)  # __WALL: it stopped for us
    libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
else:
    outcome["ptrace"] = errno.errorcode[ctypes.get_errno()]
try:
    os.close(os.open(f"/proc/{pid}/fd/1", os.O_WRONLY | os.O_NONBLOCK))
    outcome["reopen"] = "opened"
except OSError as error:
    outcome["reopen"] = errno.errorcode[error.errno]
print(json.dumps(outcome))
"""


@pytest.fixture
def scripts() -> Iterator[dict[str, str]]:
    """The scripts above, where every user can read them (not under pytest's own temporary
    directory: it is root's only)."""
    where = Path(tempfile.mkdtemp(prefix="drover-scripts-", dir="/tmp"))
    os.chmod(where, 0o755)
    made = {}
    for name, text in (("ask", ASK), ("probe", PROBE)):
        path = where / f"{name}.py"
        path.write_text(text)
        os.chmod(path, 0o644)
        made[name] = str(path)
    yield made
    shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def attackers() -> Iterator[list[str]]:
    """As many users as the node daemon's default thread pool has threads (what each, in the
    daemon before this, could take for good), made for the test and removed afterwards."""
    names = [f"drvx{uuid.uuid4().hex[:6]}" for _ in range(min(32, (os.cpu_count() or 1) + 4))]
    made = []
    try:
        for name in names:
            create_user(name)
            made.append(name)
        yield names
    finally:
        for name in made:
            remove_user(name)


def user_python(cluster: SystemCluster, user: str, script: str, *args: str) -> subprocess.Popen[str]:
    """The install's python running `script` as `user`, in the background."""
    command, env = user_command(user, [cluster.install.python, script, *args],
                                env={"DROVER_SOCKET": cluster.socket, "PATH": cluster.user_path})
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd="/", start_new_session=True, stdin=subprocess.DEVNULL)


def outcome(process: subprocess.Popen[str], timeout: float = 90) -> dict[str, object]:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def running_job(cluster: SystemCluster, user: str) -> int:
    """A job of `user`'s that runs (and writes a line to its output), its output file in the home."""
    home = pwd.getpwnam(user).pw_dir
    job = cluster.submit_as(user, "-o", f"{home}/job.out", "--", "sh", "-c", "echo mine; exec sleep 600")
    wait_until(lambda: cluster.job(job)["state"] == "running", timeout=60, describe=f"job {job} to run")
    return job


def reader_of(user: str) -> psutil.Process:
    """The output reader the node started for `user` (as root sees it)."""
    uid = pwd.getpwnam(user).pw_uid

    def find() -> psutil.Process | None:
        for process in psutil.process_iter(["uids", "cmdline"]):
            command = process.info["cmdline"] or []
            if process.info["uids"] and process.info["uids"].real == uid and any(
                    "The output reader" in part for part in command):
                return process
        return None

    return wait_until(find, timeout=30, describe=f"the output reader of {user}")


def unread_bytes(pid: int, fd: int) -> int:
    """What waits in the pipe on `fd` of process `pid` (root reopens it through /proc)."""
    pipe = os.open(f"/proc/{pid}/fd/{fd}", os.O_RDONLY | os.O_NONBLOCK)
    try:
        return int(struct.unpack("i", fcntl.ioctl(pipe, termios.FIONREAD, b"\0" * 4))[0])
    finally:
        os.close(pipe)


def pipes_of(pid: int) -> set[str]:
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("pipe:"):
                found.add(target)
    return found


def execd_pid(cluster: SystemCluster) -> int:
    return int((cluster.state_dir / "execd.pid").read_text().split()[0])


def test_a_user_cannot_trace_their_node_helper_nor_open_its_pipes(
        system_cluster: SystemCluster, users: tuple[str, str], scripts: dict[str, str]) -> None:
    user = users[0]
    job = running_job(system_cluster, user)
    first = outcome(user_python(system_cluster, user, scripts["ask"], str(job)))
    assert first.get("data") == "mine\n", first  # the node read it, through the user's reader
    probe = outcome(user_python(system_cluster, user, scripts["probe"]))
    helper = psutil.Process(int(probe["pid"]))  # type: ignore[call-overload]
    assert helper.uids().real == pwd.getpwnam(user).pw_uid  # it is the user's...
    assert probe["ptrace"] == "EPERM", probe  # ...but not dumpable: no tracing it
    assert probe["reopen"] == "EACCES", probe  # nor reaching its pipes through /proc
    assert os.stat(f"/proc/{helper.pid}/fd").st_uid == 0


def test_stalled_helpers_of_users_hold_up_no_one_elses_jobs(
        system_cluster_factory: Callable[..., SystemCluster], users: tuple[str, str], attackers: list[str],
        scripts: dict[str, str]) -> None:
    """Each attacker stops their own output reader, and its stdout is held open from outside as a
    process the user forked into it would (root does it here: the user cannot, see above), and
    asks for their output again. Meanwhile another user's jobs end, their final records written,
    in seconds; the attackers' own reads fail at their deadline, the daemon's side of each
    stalled pipe is closed, and the stalled readers are killed and reaped."""
    cluster = system_cluster_factory(cpus=len(attackers) + 2)
    victim = users[1]
    jobs = {user: running_job(cluster, user) for user in attackers}
    for user, job in jobs.items():
        assert outcome(user_python(cluster, user, scripts["ask"], str(job))).get("data") == "mine\n"
    held: list[int] = []
    asks: list[subprocess.Popen[str]] = []
    stalled: dict[int, str] = {}  # reader pid → its stdout pipe
    try:
        for user, job in jobs.items():
            reader = reader_of(user)
            stalled[reader.pid] = os.readlink(f"/proc/{reader.pid}/fd/1")
            held.append(os.open(f"/proc/{reader.pid}/fd/1", os.O_WRONLY | os.O_NONBLOCK))
            subprocess.run(user_command(user, ["kill", "-STOP", str(reader.pid)])[0], check=True,
                           env={"PATH": "/usr/bin:/bin"})
            asks.append(user_python(cluster, user, scripts["ask"], str(job)))
        for pid in stalled:  # every request is in a stopped reader's pipe
            wait_until(lambda pid=pid: unread_bytes(pid, 0) > 0, timeout=30,  # type: ignore[misc]
                       describe=f"a request in the stopped reader {pid}'s stdin")

        started = time.monotonic()
        victims = [cluster.submit_as(victim, "--", "true") for _ in range(3)]
        for job in victims:
            ended = cluster.wait_ended(job, timeout=30)
            assert ended["state"] == "completed", ended
        assert time.monotonic() - started < DEADLINE_S, "another user's jobs waited for the stalled readers"
        shown = cluster.as_root("show", *map(str, victims)).stdout
        assert "given up" not in shown and "did not finish" not in shown, shown

        for ask in asks:  # the attackers' own reads: failed at their deadline, not hung
            answer = outcome(ask)
            assert "error" in answer and float(answer["seconds"]) < DEADLINE_S + 10, answer  # type: ignore[arg-type]
        execd = execd_pid(cluster)
        for pid, pipe in stalled.items():
            wait_until(lambda pid=pid: not psutil.pid_exists(pid), timeout=10,  # type: ignore[misc]
                       describe=f"the stalled reader {pid} to be killed and reaped")
            assert pipe not in pipes_of(execd), f"the execd still holds {pipe}, the stalled reader's stdout"
        # An attacker's next read is served by a new reader.
        user = attackers[0]
        assert outcome(user_python(cluster, user, scripts["ask"], str(jobs[user]))).get("data") == "mine\n"
    finally:
        for fd in held:
            os.close(fd)
        for pid in stalled:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for ask in asks:
            if ask.poll() is None:
                ask.kill()
                ask.wait()
