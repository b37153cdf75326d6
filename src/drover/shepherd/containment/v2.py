"""cgroup v2: one cgroup per attempt under the shepherd's own."""

from __future__ import annotations

import os
import time

from drover.records import ContainmentRecord
from drover.shepherd.containment.common import (
    describe,
    kill_listed,
    limit_pids,
    make_dir,
    own_cgroup,
    pids_of,
    pids_refused,
    read,
    remove_dir,
    write,
)

MOUNTS = ("/sys/fs/cgroup/unified", "/sys/fs/cgroup")


def _mount() -> str | None:
    for mount in MOUNTS:
        if os.path.exists(os.path.join(mount, "cgroup.controllers")):
            return mount
    return None


class CgroupV2:
    name = "cgroup-v2"

    def __init__(self, path: str, home: str, memory_limit_mib: int, pids_limit: int = 0) -> None:
        self.path = path
        self.home = home  # where the shepherd came from
        self.memory_limit_mib = memory_limit_mib
        self.pids_limit = pids_limit
        self.hidden_gpus: list[int] = []  # devices are not controlled on v2 (it takes a BPF program)
        self.frozen = False  # freeze froze the attempt's cgroup, and nothing has thawed it since

    def enter(self) -> None:
        write(os.path.join(self.path, "cgroup.procs"), str(os.getpid()))

    def leave(self) -> None:
        write(os.path.join(self.home, "cgroup.procs"), str(os.getpid()))

    def kill_all(self) -> None:
        deadline = time.monotonic() + 10
        while pids_of(self.path) and time.monotonic() < deadline:
            if os.path.exists(os.path.join(self.path, "cgroup.kill")):
                write(os.path.join(self.path, "cgroup.kill"), "1")
            else:  # before Linux 5.14: freeze, kill what is listed, thaw
                self.freeze()
                kill_listed(self.path)
                self.thaw()
            time.sleep(0.001)

    def freeze(self) -> None:
        self.frozen = True
        write(os.path.join(self.path, "cgroup.freeze"), "1")
        deadline = time.monotonic() + 5
        while "frozen 1" not in (read(os.path.join(self.path, "cgroup.events")) or "frozen 1"):
            if time.monotonic() > deadline:
                break
            time.sleep(0.001)

    def thaw(self) -> None:
        if self.frozen:
            self.frozen = False
            write(os.path.join(self.path, "cgroup.freeze"), "0")

    def _stat(self, name: str, key: str) -> int | None:
        for line in (read(os.path.join(self.path, name)) or "").splitlines():
            word, _, value = line.partition(" ")
            if word == key:
                return int(value)
        return None

    def oom_killed(self) -> bool:
        return self.oom_kills() > 0

    def oom_kills(self) -> int:
        return self._stat("memory.events", "oom_kill") or 0

    def pids_refused(self) -> int:
        return pids_refused(self.path) if self.pids_limit else 0

    def peak_memory_bytes(self) -> int | None:
        text = read(os.path.join(self.path, "memory.peak"))
        return int(text) if text and text.strip().isdigit() else None

    def cpu_time_s(self) -> float | None:
        usage = self._stat("cpu.stat", "usage_usec")
        return usage / 1e6 if usage is not None else None

    def remove(self) -> None:
        remove_dir(self.path)

    def record(self) -> ContainmentRecord:
        return describe(self.name, {"": self.path})


def create(name: str, memory_mib: int, need_memory: bool = False, pids_max: int = 0) -> CgroupV2 | None:
    mount = _mount()
    own = own_cgroup("")
    if mount is None or own is None:
        return None
    home = os.path.join(mount, own.lstrip("/"))
    parent = home
    has_memory = "memory" in (read(os.path.join(parent, "cgroup.controllers")) or "").split()
    if need_memory and not has_memory:
        return None
    path = make_dir(parent, name)
    if path is None:
        return None
    if not os.path.exists(os.path.join(path, "cgroup.freeze")):
        remove_dir(path)
        return None  # the root of a hierarchy, or a kernel too old to freeze: not usable
    if has_memory:
        has_memory = _delegate("memory", home, path)
    if memory_mib and has_memory:
        write(os.path.join(path, "memory.max"), str(memory_mib * 1024 * 1024))
    elif need_memory:
        remove_dir(path)
        return None
    pids_limit = 0
    if pids_max and "pids" in (read(os.path.join(parent, "cgroup.controllers")) or "").split():
        pids_limit = limit_pids(path, pids_max) if _delegate("pids", home, path) else 0
    return CgroupV2(path, home, memory_mib if has_memory else 0, pids_limit)


def _delegate(controller: str, home: str, path: str) -> bool:
    """Enable `controller` down to the attempt: home → drover-<cluster>/ → attempt; False where
    the kernel refuses (a controller bound to a v1 hierarchy, a cgroup with processes of its own)."""
    try:
        for directory in (home, os.path.dirname(path)):
            if controller not in (read(os.path.join(directory, "cgroup.subtree_control")) or "").split():
                write(os.path.join(directory, "cgroup.subtree_control"), f"+{controller}")
    except OSError:
        return False
    return True
