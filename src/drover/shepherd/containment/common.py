"""What the cgroup backends share: finding the caller's own cgroup, writing control files."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time

from drover.records import ContainmentRecord

_own_lines: list[str] | None = None


def own_cgroup(controller: str) -> str | None:
    """The caller's cgroup path in the v1 hierarchy of `controller`, or in v2 for "".
    /proc/self/cgroup is read once per process, before the shepherd moves: the fork server reads
    it (`remember_own_cgroups`) and every shepherd it forks starts where the server is."""
    lines = remember_own_cgroups()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller == "" and controllers == "" and line.startswith("0::"):
            return path
        if controller and controller in controllers.split(","):
            return path
    return None


def remember_own_cgroups() -> list[str]:
    global _own_lines
    if _own_lines is None:
        try:
            with open("/proc/self/cgroup") as file:
                _own_lines = file.read().splitlines()
        except OSError:
            _own_lines = []
    return _own_lines


# A cgroup's control files are read and written with single system calls: an attempt touches
# some twenty of them, and Python's file objects (a buffer and a text layer, made and closed for
# each) cost three times the calls themselves.

def write(path: str, value: str) -> None:
    """Write `value` to a control file in one write(2): the kernel takes each write as one
    request, and says there (EINVAL, EBUSY...) if it refuses it."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def read(path: str) -> str | None:
    """A control file's whole text; None where it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks).decode()
    except OSError:
        return None
    finally:
        os.close(fd)


def pids_of(directory: str) -> list[int]:
    text = read(os.path.join(directory, "cgroup.procs")) or ""
    return [int(word) for word in text.split()]


def group_name(cluster: str, attempt: str) -> str:
    """The attempt's cgroup, relative to the shepherd's own: ``drover-<cluster>/<attempt>``.
    The cluster's tag keeps clusters side by side on one host (two users' personal clusters, a
    personal one beside the shared one) from ever touching each other's attempts."""
    return os.path.join(f"drover-{cluster}" if cluster else "drover", attempt)


class LeftOver(RuntimeError):
    """An attempt's cgroup is there already, with processes in it (make_dir)."""


def make_dir(parent: str, name: str, fresh: bool = True) -> str | None:
    """<parent>/<name> (see group_name), created; None if the hierarchy is not writable. The
    cluster's directory is made if missing; a node daemon that stops removes it when it is empty
    (remove_cluster_parents), which may happen between the two mkdirs: then once more.

    `fresh`: an attempt's cgroup is its own from its first write. One of its name already there
    was left by an earlier life of the name (a cluster whose state was started again from job 1,
    a clean-up that could not remove it), and keeps that life's limits and state: a memory limit
    the attempt did not ask for, a frozen freezer. It is removed and made again; where a process
    of that life is still in it, LeftOver: the attempt fails, saying so, rather than run without
    the limits its containment would give it. A slot's cpuset (slots.py) is shared on purpose:
    `fresh` False takes it as it is."""
    path = os.path.join(parent, name)
    for _ in range(3):
        try:
            try:
                os.mkdir(path)  # the cluster's directory is there but for the first attempt
            except FileNotFoundError:
                os.makedirs(path)
            return path
        except FileExistsError:
            if not fresh:
                return path
            try:
                os.rmdir(path)
            except FileNotFoundError:
                continue
            except OSError as error:
                if error.errno == errno.EBUSY:
                    raise LeftOver(f"the cgroup {path} is left from an earlier attempt of the name, with processes "
                                   "in it") from None
                return None
        except FileNotFoundError:
            continue
        except OSError:
            return None
    return None


# A cgroup whose last tasks were just killed can refuse rmdir (EBUSY) until those tasks have
# finished exiting: the attempt's own cgroup is tried again for this long.
REMOVE_PATIENCE_S = 2.0


def remove_dir(path: str) -> None:
    """rmdir the attempt's cgroup. Its cluster's parent stays for the next attempt (made once,
    not once per attempt; the node daemon removes it when it stops: `remove_cluster_parents`)."""
    deadline = time.monotonic() + REMOVE_PATIENCE_S
    while True:
        try:
            os.rmdir(path)
            break
        except OSError as error:
            if error.errno != errno.EBUSY or time.monotonic() > deadline:
                return
            time.sleep(0.005)


HIERARCHIES = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/freezer", "/sys/fs/cgroup/memory",
               "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/devices")


def remove_cluster_parents(cluster: str) -> None:
    """The cluster's parent cgroups (drover-<cluster> under the caller's own cgroup, in every
    hierarchy), with the slots' cpusets kept between attempts (slots.py), where no attempt is
    left in them: rmdir refuses a cgroup that has children or tasks, so the attempts of jobs
    that go on running keep theirs."""
    parent = os.path.dirname(group_name(cluster, "attempt"))
    for line in remember_own_cgroups():
        _, controllers, own = line.split(":", 2)
        names = controllers.split(",") if controllers else [""]
        for mount in HIERARCHIES:
            name = os.path.basename(mount)
            if (controllers == "" and name in ("cgroup", "unified")) or (controllers and name in names):
                top = os.path.join(mount, own.lstrip("/"), parent)
                with contextlib.suppress(OSError):
                    for kept in os.listdir(top):  # the slots' cpusets (slots.py), where empty
                        if kept.startswith("slot-"):
                            with contextlib.suppress(OSError):
                                os.rmdir(os.path.join(top, kept))
                    os.rmdir(top)


def limit_pids(path: str, pids_max: int) -> int:
    """Set the attempt's pids.max (the same file in v1 and v2); the limit set, or 0 for none
    (none asked for, or the kernel refused it)."""
    if pids_max <= 0:
        return 0
    try:
        write(os.path.join(path, "pids.max"), str(pids_max))
    except OSError:
        return 0
    return pids_max


def pids_refused(path: str | None) -> int:
    """How many times a fork or clone of the attempt was refused at its pids.max: the "max"
    counter of pids.events (v1 and v2 alike); 0 where there is none."""
    if path is None:
        return 0
    for line in (read(os.path.join(path, "pids.events")) or "").splitlines():
        key, _, value = line.partition(" ")
        if key == "max" and value.strip().isdigit():
            return int(value)
    return 0


def describe(backend: str, cgroups: dict[str, str]) -> ContainmentRecord:
    return {"backend": backend, "cgroups": cgroups, "shepherd": os.getpid(), "session": os.getsid(0)}


def kill_listed(directory: str) -> int:
    """SIGKILL every process listed in the cgroup; how many there were."""
    pids = pids_of(directory)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(pids)
