"""cgroup v1: the memory, freezer, cpuacct, cpuset and pids hierarchies, one cgroup in each; and
the devices hierarchy, where the node has GPUs the attempt was not given. The cpuset is the
slot's, kept between attempts, where it is empty (slots.py)."""

from __future__ import annotations

import os
import time

from drover.records import ContainmentRecord
from drover.shepherd.containment import slots
from drover.shepherd.containment.common import (
    LeftOver,
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

ROOT = "/sys/fs/cgroup"
CONTROLLERS = ("freezer", "memory", "cpuacct", "cpuset", "pids", "devices")
NVIDIA_MAJOR = 195  # the character devices /dev/nvidiaN are 195:N (nvidiactl, 195:255, is no GPU)


class CgroupV1:
    name = "cgroup-v1"

    def __init__(self, paths: dict[str, str], homes: dict[str, str], memory_limit_mib: int,
                 pids_limit: int = 0) -> None:
        self.paths = paths  # controller → the attempt's cgroup in it
        self.homes = homes  # controller → where the shepherd came from
        self.memory_limit_mib = memory_limit_mib
        self.pids_limit = pids_limit
        self.hidden_gpus: list[int] = []  # the node's GPUs its devices cgroup denies the attempt
        self.kept: set[str] = set()  # controllers whose cgroup is a slot's, not removed with the attempt's
        self.frozen = False  # freeze froze the attempt's freezer cgroup, and nothing has thawed it since
        self._affinity: set[int] | None = None  # ours before `enter`

    def enter(self) -> None:
        # Entering a cpuset narrows our affinity to its CPUs, and going home does not widen it
        # again: `leave` gives back what we had, for the rest of the sequence and any attempt after.
        self._affinity = os.sched_getaffinity(0)
        for path in self.paths.values():
            write(os.path.join(path, "cgroup.procs"), str(os.getpid()))

    def leave(self) -> None:
        for controller in self.paths:
            write(os.path.join(self.homes[controller], "cgroup.procs"), str(os.getpid()))
        if "cpuset" in self.paths and self._affinity is not None:
            try:
                os.sched_setaffinity(0, self._affinity)
            except OSError:
                pass  # a CPU went offline meanwhile: what the home cpuset gave us stays

    def kill_all(self) -> None:
        """Freeze, SIGKILL all, thaw (a frozen task dies only once thawed); until none is left."""
        freezer = self.paths["freezer"]
        deadline = time.monotonic() + 10
        while pids_of(freezer) and time.monotonic() < deadline:
            self.freeze()
            kill_listed(freezer)
            self.thaw()
            time.sleep(0.001)

    def freeze(self) -> None:
        self.frozen = True
        state = os.path.join(self.paths["freezer"], "freezer.state")
        write(state, "FROZEN")
        deadline = time.monotonic() + 5
        while (read(state) or "FROZEN").strip() != "FROZEN" and time.monotonic() < deadline:
            time.sleep(0.001)

    def thaw(self) -> None:
        if self.frozen:
            self.frozen = False
            write(os.path.join(self.paths["freezer"], "freezer.state"), "THAWED")

    def oom_killed(self) -> bool:
        return self.oom_kills() > 0

    def oom_kills(self) -> int:
        if "memory" not in self.paths:
            return 0
        for line in (read(os.path.join(self.paths["memory"], "memory.oom_control")) or "").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def pids_refused(self) -> int:
        return pids_refused(self.paths.get("pids"))

    def peak_memory_bytes(self) -> int | None:
        text = read(os.path.join(self.paths.get("memory", "/nonexistent"), "memory.max_usage_in_bytes"))
        return int(text) if text else None

    def cpu_time_s(self) -> float | None:
        text = read(os.path.join(self.paths.get("cpuacct", "/nonexistent"), "cpuacct.usage"))
        return int(text) / 1e9 if text else None

    def remove(self) -> None:
        for controller, path in self.paths.items():
            if controller not in self.kept:
                remove_dir(path)

    def record(self) -> ContainmentRecord:
        return describe(self.name, dict(self.paths))


def create(name: str, memory_mib: int, cpu_ids: list[int] | None = None, pids_max: int = 0,
           hidden_gpus: list[int] | None = None) -> CgroupV1 | None:
    """`hidden_gpus`: the node's GPUs (their indices, /dev/nvidiaN) the attempt may not open."""
    paths: dict[str, str] = {}
    homes = controller_homes()
    for controller, home in homes.items():
        if controller == "cpuset":
            continue  # the slot's, below: only once the attempt is sure to be contained here
        if controller == "pids" and pids_max <= 0 or controller == "devices" and not hidden_gpus:
            continue  # nothing to limit or deny: a cgroup made and removed for nothing (30 µs each)
        try:
            # Hierarchies mounted together (one home for two controllers): one cgroup, made once.
            same = next((path for other, path in paths.items() if homes[other] == home), None)
            path = same or make_dir(home, name)
        except LeftOver:
            _remove_all(paths)
            raise
        if path is not None:
            paths[controller] = path
    if "freezer" not in paths or "memory" not in paths:
        _remove_all(paths)
        return None  # without the freezer it cannot kill without races; without memory, v2 is as good
    if memory_mib:
        write(os.path.join(paths["memory"], "memory.limit_in_bytes"), str(memory_mib * 1024 * 1024))
    try:
        kept = _cpuset(paths, homes.get("cpuset"), name, cpu_ids or [])
    except LeftOver:
        _remove_all(paths)
        raise
    pids_limit = 0
    if "pids" in paths:
        pids_limit = limit_pids(paths["pids"], pids_max)
        if not pids_limit:
            remove_dir(paths.pop("pids"))
    hidden: list[int] = []
    if "devices" in paths:
        hidden = _deny_gpus(paths["devices"], hidden_gpus or [])
        if not hidden:
            remove_dir(paths.pop("devices"))
    made = CgroupV1(paths, homes, memory_mib, pids_limit)
    made.hidden_gpus = hidden
    made.kept = kept
    return made


def _remove_all(paths: dict[str, str]) -> None:
    for path in paths.values():
        remove_dir(path)


_homes_found: dict[str, str] | None = None


def controller_homes() -> dict[str, str]:
    """Controller → the caller's own cgroup in its hierarchy, for those mounted here: found once
    per process (the fork server's, where every shepherd starts), a copy each call."""
    global _homes_found
    if _homes_found is None:
        found: dict[str, str] = {}
        seen: dict[tuple[int, int], str] = {}  # a directory → the first path it was found at
        for controller in CONTROLLERS:
            own = own_cgroup(controller)
            if own is None:
                continue
            home = os.path.join(ROOT, controller, own.lstrip("/"))
            try:
                where = os.stat(home)
            except OSError:
                continue
            # Two controllers mounted together (cpuset,memory; a link to one hierarchy): one path
            # for both, so that the attempt's cgroup there is made once (create).
            found[controller] = seen.setdefault((where.st_dev, where.st_ino), home)
        _homes_found = found
    return dict(_homes_found)


def _cpuset(paths: dict[str, str], home: str | None, name: str, cpu_ids: list[int]) -> set[str]:
    """Put the attempt's cpuset in `paths`: its slot's where that is empty (slots.py), else one
    of its own; none where the hierarchy is not writable. {"cpuset"} where it is the slot's."""
    from drover.shepherd.setup import physical_cpus

    if home is None:
        return set()
    cpus = physical_cpus(cpu_ids) if cpu_ids else None
    # Only beneath a cluster's directory, which the node daemon clears when it stops.
    slot = slots.take(slots.slot_path(home, name, cpus)) if os.path.dirname(name) else None
    if slot is not None:
        path, made_now = slot
        # Pinned once, when it is made; one made a moment ago by another attempt's shepherd may
        # not be pinned yet, and a task cannot join a cpuset without CPUs and memory nodes.
        if made_now and _pin(path, home, cpu_ids) or not made_now and slots.pinned(path, cpus):
            paths["cpuset"] = path
            return {"cpuset"}
        if made_now:
            remove_dir(path)
    mounted_together = os.path.join(home, name) in paths.values()  # the cpuset's hierarchy is another's too
    own = os.path.join(home, name) if mounted_together else make_dir(home, name)
    if own is not None:
        if _pin(own, home, cpu_ids):
            paths["cpuset"] = own
        else:
            remove_dir(own)
    return set()


def _deny_gpus(path: str, gpus: list[int]) -> list[int]:
    """Slurm's ConstrainDevices for the GPUs the attempt was not given: each /dev/nvidiaN an
    exception to the cgroup's "allow all", so opening it fails with EPERM, whoever the process
    is (root too). The GPUs denied; none where the kernel refused a rule."""
    try:
        for index in gpus:
            write(os.path.join(path, "devices.deny"), f"c {NVIDIA_MAJOR}:{index} rwm")
    except OSError:
        return []
    return list(gpus)


def _pin(path: str, home: str, cpu_ids: list[int]) -> bool:
    """A cpuset the job cannot widen: the attempt's CPUs (all of the node's if none were given),
    and the memory nodes of the parent. A cpuset must have both before a task can join. The
    cluster's cpuset (drover-<cluster>/, kept between attempts) takes its parent's once, and
    hands them to each attempt's as it is made (cgroup.clone_children)."""
    from drover.shepherd.setup import physical_cpus

    try:
        cluster = os.path.dirname(path)
        if not (read(os.path.join(cluster, "cpuset.mems")) or "").strip():
            _inherit(cluster, home)
            write(os.path.join(cluster, "cgroup.clone_children"), "1")
        if not (read(os.path.join(path, "cpuset.mems")) or "").strip():  # made before that was set
            _inherit(path, cluster)
        if cpu_ids:
            write(os.path.join(path, "cpuset.cpus"), ",".join(str(c) for c in sorted(physical_cpus(cpu_ids))))
        return True
    except OSError:
        return False


def _inherit(directory: str, parent: str) -> None:
    for name in ("cpuset.cpus", "cpuset.mems"):
        write(os.path.join(directory, name), (read(os.path.join(parent, name)) or "").strip())
