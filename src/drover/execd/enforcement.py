"""Reservation against use (jobd's load_max and mem_max): after each sampling round, an attempt
that uses more CPU than it reserved, or more memory than it requested, is reniced; one over its
memory is warned; and where no cgroup limit acts on its memory, one over the hard limit is ended
as OUT_OF_MEMORY.

    CPU      the mean of the last CPU_WINDOW samples over cpus × (1 + cpu_tolerance): every
             process of the attempt gets a nice RENICE_STEP higher (at most 19), once per
             escalation: the next needs CPU_WINDOW samples taken after it, all still over.
    memory   the latest sample over memory_mib (its request): reniced the same way and warned,
             once: an event, and a line in the job's error file (its output file when stderr is
             joined), appended by a small process that runs as the job's owner.
    hard     the latest sample over memory_mib × memory_hard_factor where no cgroup memory
             limit acts (the subreaper backend, or a cgroup without one): the attempt's
             processes are killed, after `over_memory` is written in its spool directory, which
             makes its exit record say out_of_memory (attempt_records.exit_status).

`decide` is the whole policy, on plain data; `Enforcer` carries it out. Whether each check is on
for an attempt: its queue's `enforce_cpu`/`enforce_memory` if set, else the node's; "auto" is on
only where no cgroup limit acts for that resource (a cpuset or a CPU quota; a memory limit).
Each action goes to the controller as an `Enforced` report, recorded as an event of the job.

Root only renices and kills processes found through the attempt's cgroup or below its shepherd
(never by a name), reads the kernel's files, and writes the marker in the spool, which is
Drover's; the job's error file is opened by the owner's own process, never by root.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from drover.execd import attempt_records
from drover.execd.attempt_records import OVER_MEMORY
from drover.execd.cgroup_usage import read_file
from drover.owner_process import OwnerProcess
from drover.protocol.node_channel import Enforced, Sample
from drover.records import AttemptConfig, ContainmentRecord
from drover.spool import layout
from drover.spool.atomic import write_json

log = logging.getLogger("drover.execd")

Mode = Literal["auto", "on", "off"]
CPU_WINDOW = 3  # samples whose mean must be over the reservation: a burst is not a habit
RENICE_STEP = 5
MAX_NICE = 19
MIB = 1 << 20
NOTE_WRITER = "drover.execd.output_note"
NOTE_TIMEOUT_S = 10.0
UNLIMITED_V1 = 1 << 60  # memory.limit_in_bytes of a v1 cgroup without a limit is near 2**63


@dataclass(frozen=True, slots=True)
class Settings:
    """The node's [execd] settings."""

    enforce_cpu: Mode = "auto"
    enforce_memory: Mode = "auto"
    cpu_tolerance: float = 0.25
    memory_hard_factor: float = 1.5  # 0: no hard limit, warnings only


@dataclass(frozen=True, slots=True)
class Policy:
    """What is enforced on one attempt, decided once from its order, the node and its limits."""

    cpus: int
    memory_mib: int  # 0: no request, nothing to enforce
    cpu: bool
    memory: bool
    hard: bool  # the hard memory limit: only where no cgroup limit acts on memory
    cpu_tolerance: float = 0.25
    memory_hard_factor: float = 1.5


@dataclass(slots=True)
class Done:
    """What was done to one attempt so far (kept between rounds)."""

    cpu_at: float | None = None  # when it was last reniced for its CPU (a sample's time)
    memory_warned: bool = False
    killed: bool = False


@dataclass(frozen=True, slots=True)
class Action:
    action: str  # "reniced", "memory_warning" or "killed_over_memory"
    reason: str  # "cpu" or "memory"
    detail: dict[str, Any] = field(default_factory=dict)
    nice_to: int | None = None  # for "reniced"


def enabled(mode: str, limited: bool) -> bool:
    return mode == "on" or (mode == "auto" and not limited)


def policy_for(settings: Settings, cpus: int, memory_mib: int, queue_cpu: str | None, queue_memory: str | None,
               cpu_limited: bool, memory_limited: bool) -> Policy:
    memory = enabled(queue_memory or settings.enforce_memory, memory_limited) and memory_mib > 0
    return Policy(
        cpus=cpus, memory_mib=memory_mib,
        cpu=enabled(queue_cpu or settings.enforce_cpu, cpu_limited) and cpus > 0,
        memory=memory, hard=memory and not memory_limited and settings.memory_hard_factor > 0,
        cpu_tolerance=settings.cpu_tolerance, memory_hard_factor=settings.memory_hard_factor,
    )


def decide(samples: Sequence[Sample], policy: Policy, nice: int | None, done: Done) -> list[Action]:
    """The actions due now. `samples`: the attempt's recent samples, oldest first; `nice`: the
    lowest nice value among its processes (None: none could be read). Pure: `done` is read only."""
    if not samples or done.killed:
        return []
    latest = samples[-1]
    actions: list[Action] = []
    memory_mib = latest.memory_bytes / MIB
    if policy.hard and memory_mib > policy.memory_mib * policy.memory_hard_factor:
        limit_mib = round(policy.memory_mib * policy.memory_hard_factor, 1)
        detail: dict[str, Any] = {"memory_mib": round(memory_mib, 1), "requested_mib": policy.memory_mib,
                                  "limit_mib": limit_mib}
        return [Action("killed_over_memory", "memory", detail)]
    target = min(nice + RENICE_STEP, MAX_NICE) if nice is not None and nice < MAX_NICE else None
    if policy.memory and not done.memory_warned and memory_mib > policy.memory_mib:
        detail = {"memory_mib": round(memory_mib, 1), "requested_mib": policy.memory_mib}
        actions.append(Action("memory_warning", "memory", detail))
        if target is not None:
            actions.append(Action("reniced", "memory", {**detail, "nice_from": nice, "nice_to": target}, target))
    if policy.cpu and target is not None and not any(a.action == "reniced" for a in actions):
        recent = [s for s in samples if done.cpu_at is None or s.at > done.cpu_at][-CPU_WINDOW:]
        limit = policy.cpus * (1 + policy.cpu_tolerance)
        if len(recent) == CPU_WINDOW:
            mean = sum(s.cpu for s in recent) / CPU_WINDOW
            if mean > limit:
                detail = {"cpu": round(mean, 2), "cpus": policy.cpus, "limit": round(limit, 2),
                          "nice_from": nice, "nice_to": target}
                actions.append(Action("reniced", "cpu", detail, target))
    return actions


def record(done: Done, actions: Sequence[Action], at: float) -> None:
    """Remember what was done at `at` (the latest sample's time)."""
    for action in actions:
        if action.action == "killed_over_memory":
            done.killed = True
        elif action.action == "memory_warning":
            done.memory_warned = True
        elif action.reason == "cpu":
            done.cpu_at = at


# -- what the kernel says and does -------------------------------------------------------------


def limits(record: ContainmentRecord | None) -> tuple[bool, bool]:
    """(a CPU limit acts, a memory limit acts) on the attempt's cgroups: a cpuset or CPU quota;
    memory.max or memory.limit_in_bytes. Only Drover's cgroups under /sys/fs/cgroup are read."""
    if record is None:
        return False, False
    cgroups = {name: path for name, path in record["cgroups"].items() if path.startswith("/sys/fs/cgroup/")}
    if record["backend"] == "cgroup-v2" and "" in cgroups:
        path = cgroups[""]
        memory = (read_file(os.path.join(path, "memory.max")) or "max").strip()
        quota = (read_file(os.path.join(path, "cpu.max")) or "max").split()[:1]
        cpuset = (read_file(os.path.join(path, "cpuset.cpus")) or "").strip()
        return quota != ["max"] or bool(cpuset), memory != "max"
    if record["backend"] == "cgroup-v1":
        memory_limit = None
        if "memory" in cgroups:
            text = (read_file(os.path.join(cgroups["memory"], "memory.limit_in_bytes")) or "").strip()
            memory_limit = int(text) if text.isdigit() else None
        cfs_quota = (read_file(os.path.join(cgroups["cpu"], "cpu.cfs_quota_us")) or "-1").strip() if "cpu" in cgroups else "-1"
        return "cpuset" in cgroups or cfs_quota not in ("-1", ""), memory_limit is not None and memory_limit < UNLIMITED_V1
    return False, False


def lowest_nice(pids: Sequence[int]) -> int | None:
    values = [value for pid in pids for tid in _threads(pid) if (value := _nice(tid)) is not None]
    return min(values) if values else None


def renice(pids: Sequence[int], target: int) -> int:
    """Raise every thread of `pids` whose nice is below `target` to it (never lower one);
    how many were changed."""
    changed = 0
    for pid in pids:
        for tid in _threads(pid):
            current = _nice(tid)
            if current is None or current >= target:
                continue
            try:
                os.setpriority(os.PRIO_PROCESS, tid, target)
                changed += 1
            except OSError:
                pass  # it ended meanwhile
    return changed


def kill(pids: Sequence[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _threads(pid: int) -> list[int]:
    # setpriority(PRIO_PROCESS) acts on one thread: each of a process's threads is reniced.
    try:
        return [int(name) for name in os.listdir(f"/proc/{pid}/task") if name.isdigit()]
    except OSError:
        return []


def _nice(tid: int) -> int | None:
    try:
        return os.getpriority(os.PRIO_PROCESS, tid)
    except OSError:
        return None


# -- the node's side ------------------------------------------------------------------------------


def _which(config: AttemptConfig | None) -> str:
    """"job 12 (attempt 1): ", as the shepherd's out-of-memory line names the attempt."""
    if config is None:
        return ""
    job = f"{config['job_id']}.{config['task_index']}" if config["is_array"] else str(config["job_id"])
    return f"job {job} (attempt {config['attempt_number']}): "


@dataclass(slots=True)
class Watched:
    policy: Policy | None = None
    config: AttemptConfig | None = None
    done: Done = field(default_factory=Done)


class Enforcer:
    def __init__(self, settings: Settings, send: Callable[[Any], None]) -> None:
        self.settings = settings
        self.send = send
        self.watched: dict[str, Watched] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        # The note writers of owners who have notes on their way: one per owner, whose notes wait
        # behind each other's only (a bounded number of them); it goes with the last of them.
        self._note_writers: dict[int | None, OwnerProcess] = {}

    def forget(self, attempt: str) -> None:
        self.watched.pop(attempt, None)

    def check(self, spool: layout.SpoolDir, containment: ContainmentRecord | None, samples: Sequence[Sample],
              pids: Sequence[int]) -> list[Action]:
        """After a sampling round, for one attempt: decide, then act. `pids`: its processes as
        the round found them (through its cgroup, or below its shepherd)."""
        watched = self.watched.setdefault(spool.name, Watched())
        if watched.policy is None:
            config = attempt_records.config(spool)
            if config is None or containment is None:
                return []  # not readable yet: the next round
            cpu_limited, memory_limited = limits(containment)
            watched.config = config
            watched.policy = policy_for(self.settings, config["cpus"], config["memory_mib"],
                                        config.get("enforce_cpu"), config.get("enforce_memory"),
                                        cpu_limited, memory_limited)
        policy = watched.policy
        if not (policy.cpu or policy.memory) or not samples or not pids:
            return []
        actions = decide(samples, policy, lowest_nice(pids), watched.done)
        record(watched.done, actions, samples[-1].at)
        for action in actions:
            self._act(spool, watched, action, pids)
        return actions

    def _act(self, spool: layout.SpoolDir, watched: Watched, action: Action, pids: Sequence[int]) -> None:
        detail = dict(action.detail, reason=action.reason)
        if action.action == "killed_over_memory":
            # The marker first: when the shepherd sees its job end, the record is there.
            write_json(spool.record(OVER_MEMORY), detail)
            kill(pids)
            self._note(watched.config, f"drover: {_which(watched.config)}killed: out of memory: it used "
                                       f"{detail['memory_mib']} MiB of memory, over its limit of {detail['limit_mib']} "
                                       f"MiB (requested {detail['requested_mib']} MiB)")
        elif action.action == "reniced" and action.nice_to is not None:
            detail["processes"] = len(pids)
            detail["changed"] = renice(pids, action.nice_to)
        elif action.action == "memory_warning":
            self._note(watched.config, f"drover: warning: it uses {detail['memory_mib']} MiB of memory, more than "
                                       f"the {detail['requested_mib']} MiB it requested")
        log.info("attempt %s: %s (%s)", spool.name, action.action, detail)
        self.send(Enforced(spool.name, action.action, detail))

    def _note(self, config: AttemptConfig | None, line: str) -> None:
        """Append `line` to the job's error file (its output file when stderr is joined), as its
        owner. Never waited for: a file on a hung filesystem delays nothing."""
        if config is None or config["job"]["pty"]:
            return
        path = config["stderr"] or config["stdout"]
        if not os.path.isabs(path):
            path = os.path.join(config["workdir"], path)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no event loop (a unit test of the decisions): nothing to append with
        identity = config.get("identity")
        uid = identity["uid"] if identity is not None else None
        writer = self._note_writers.get(uid)
        if writer is None:
            writer = self._note_writers[uid] = (
                OwnerProcess(NOTE_WRITER, identity["uid"], identity["gid"], identity["groups"])
                if identity is not None else OwnerProcess(NOTE_WRITER))
        task = loop.create_task(self._append(uid, writer, path, line))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _append(self, uid: int | None, writer: OwnerProcess, path: str, line: str) -> None:
        try:
            answer = await writer.ask({"path": path, "line": line}, NOTE_TIMEOUT_S)
            if answer.get("error"):
                log.warning("cannot append to %s: %s", path, answer["error"])
        except Exception as error:
            log.warning("cannot append to %s: %s", path, error or "timed out")
        finally:
            if writer.idle and self._note_writers.get(uid) is writer:
                del self._note_writers[uid]
                await writer.close()

