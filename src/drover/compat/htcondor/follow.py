"""The job event log's follower: a small process, started by condor_submit as the user who
submits, that turns each cluster's Drover events into HTCondor's events in the log file(s) the
submit file named, and brings the files a sandboxed job staged out back to its initialdir (as
HTCondor's shadow does on the submit side). One runs per user and cluster: the next
condor_submits hand their clusters to it (handoff.py), and it follows each in a thread of its
own; it ends once every cluster it took has ended and no request waits.

While procs run, it reads what their nodes measure (the job's live samples) every
IMAGE_SIZE_ENV seconds (300 by default, as often as HTCondor's starter updates its shadow) and
writes a 006 image size event for each proc whose memory changed since the last one, as
HTCondor's shadow does; the last 006 comes with the termination, from the attempt's own record.

Why a process of the user's: root never opens, creates or follows a path a user chose
(docs/security.md), and HTCondor's log is such a path. The follower runs with the submitter's
own uid, so the kernel checks each open against the submitter's rights, on a personal cluster
and on a shared one alike; it reads the cluster as any client does, and nothing of the cluster
waits on it.

Started as `python -m drover.compat.htcondor.follow DIRECTORY TAG LOCK_FD`, holding the
lock of its cluster's TAG through LOCK_FD. Each request in the directory is one JSON object:
    {"cluster": 12, "owner": "ann", "logs": {"0": "/home/ann/x.log"}, "iwds": {"0": "/home/ann"},
     "sandbox": false, "staged_in": false, "request": {"cpus": 1, "memory_mb": 128, "disk_kb": 0,
     "gpus": 0}}
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from drover.compat.htcondor import eventlog
from drover.compat.htcondor.common import memory_kib, node_address
from drover.core.errors import DroverError

GRACE_ENV = "DROVER_HTCONDOR_FOLLOW_GRACE_S"
DEFAULT_GRACE_S = 300.0  # how long an unreachable cluster is waited for before the follower gives up
WAIT_S = 20  # each long poll of the cluster's events
IMAGE_SIZE_ENV = "DROVER_HTCONDOR_IMAGE_SIZE_S"
LOOK_S = 0.5  # how often the directory is looked at where no inotify watch can be had (wakeup.py)
DEFAULT_IMAGE_SIZE_S = 300.0  # HTCondor's STARTER_UPDATE_INTERVAL: its 006 events come at most this often
ENDED = ("completed", "failed", "timed_out", "out_of_memory", "cancelled")


@dataclass
class ProcState:
    held: bool = False
    ended: bool = False
    node: str = ""
    exit_code: int | None = None
    signal: int | None = None
    failure: str | None = None
    lost: bool = False
    running: bool = False
    sizes: tuple[int, int] | None = None  # (peak, resident) KiB of the last 006 written while running


@dataclass
class Follower:
    cluster: int
    owner: str
    logs: dict[int, str]
    iwds: dict[int, str]
    sandbox: bool
    staged_in: bool
    request: eventlog.Request
    procs: dict[int, ProcState] = field(default_factory=dict)
    refused: set[str] = field(default_factory=set)  # logs that could not be written
    after: int = 0
    done: bool = False
    image_size_s: float = DEFAULT_IMAGE_SIZE_S
    sample_due: float | None = None  # time.monotonic() of the next look at the running procs' memory

    def write(self, proc: int, text: str) -> None:
        """Append to the proc's log; a log the submitter cannot write (any more) is given up,
        the others and the output files still served."""
        path = self.logs.get(proc)
        if not path or path in self.refused:
            return
        try:
            eventlog.append(path, text)
        except OSError:
            self.refused.add(path)

    def handle(self, client: Any, event: Any) -> None:
        """One Drover event of the cluster, as HTCondor's events of the procs it concerns."""
        kind, when = event.kind, event.time
        detail = event.detail or {}
        targets = list(self.procs) if event.index is None else [event.index]
        for proc in targets:
            state = self.procs.setdefault(proc, ProcState())
            if state.ended:
                continue
            self._one(client, proc, state, kind, when, detail, event)
        if kind == "job_ended":
            self.done = True

    def _one(self, client: Any, proc: int, state: ProcState, kind: str, when: float, detail: dict[str, Any],
             event: Any) -> None:
        c = self.cluster
        if kind == "held" and not state.held and not (state.running and event.index is None):
            state.held = True
            self.write(proc, eventlog.held(c, proc, when, f"via condor_hold (by user {self.owner})", 1))
        elif kind == "held_in_error" and not state.held:
            state.held = True
            why = state.failure or detail.get("reason") or "the job could not be started"
            self.write(proc, eventlog.held(c, proc, when, f"Error from slot1@{state.node or 'node'}: {why}", 6))
        elif kind == "released" and state.held:
            state.held = False
            self.write(proc, eventlog.released(c, proc, when, f"via condor_release (by user {self.owner})"))
        elif kind == "dispatched":
            state.node = detail.get("node") or state.node
            state.exit_code = state.signal = state.failure = None
            state.lost = False
        elif kind == "started":
            state.running = True
            if self.sample_due is None:
                self.sample_due = time.monotonic() + self.image_size_s
            if self.staged_in:
                self.write(proc, eventlog.file_transfer(c, proc, when, eventlog.TRANSFER_INPUT_STARTED))
                self.write(proc, eventlog.file_transfer(c, proc, when, eventlog.TRANSFER_INPUT_FINISHED))
            node = state.node or "localhost"
            self.write(proc, eventlog.executing(c, proc, when, node_address(node), f"slot1@{node}"))
        elif kind == "suspended":
            self.write(proc, eventlog.suspended(c, proc, when))
        elif kind == "resumed":
            self.write(proc, eventlog.unsuspended(c, proc, when))
        elif kind == "exited":
            state.exit_code, state.signal, state.failure = (detail.get("exit_code"), detail.get("signal"),
                                                            detail.get("failure"))
        elif kind == "staged_out":
            self.write(proc, eventlog.file_transfer(c, proc, when, eventlog.TRANSFER_OUTPUT_STARTED,
                                                    node_address(state.node or "localhost")))
            if self.sandbox:
                self._bring_back(client, proc, event.attempt or 1, detail.get("files") or [])
            self.write(proc, eventlog.file_transfer(c, proc, time.time(), eventlog.TRANSFER_OUTPUT_FINISHED))
        elif kind == "node_failed":
            state.lost = True
            self.write(proc, eventlog.shadow_exception(c, proc, when, f"Job lost its node {state.node}"))
        elif kind == "requeued":
            state.running = False
            state.sizes = None
            if not state.lost:
                self.write(proc, eventlog.evicted(c, proc, when, "the job ended to be run again (requeued)"))
        elif kind == "cancelled":
            state.ended = True
            self.write(proc, eventlog.aborted(c, proc, when, f"via condor_rm (by user {self.owner})"))
        elif kind in ENDED:
            state.ended = True
            self._terminated(client, proc, state, when)

    def sample(self, client: Any) -> None:
        """A 006 for each running proc whose memory changed since its last one; the next look
        in image_size_s, while any proc runs."""
        self.sample_due = None
        running = {proc for proc, state in self.procs.items() if state.running and not state.ended}
        if not running:
            return
        self.sample_due = time.monotonic() + self.image_size_s
        try:
            samples = client.samples(self.cluster).attempts
        except DroverError:  # the sizes are a nicety: looked at again next time
            return
        for attempt in samples:
            state = self.procs.get(attempt.task)
            if attempt.task not in running or state is None:
                continue
            sizes = (max(attempt.peak_bytes, attempt.latest.rss_bytes) // 1024, attempt.latest.rss_bytes // 1024)
            if sizes != state.sizes:
                state.sizes = sizes
                self.write(attempt.task, eventlog.image_size(self.cluster, attempt.task, attempt.latest.at, *sizes))

    def wait_s(self) -> int:
        """How long the next long poll may wait: until the next look at the procs' memory."""
        if self.sample_due is None:
            return WAIT_S
        return max(1, min(WAIT_S, math.ceil(self.sample_due - time.monotonic())))

    def _terminated(self, client: Any, proc: int, state: ProcState, when: float) -> None:
        c = self.cluster
        if state.exit_code is None and state.signal is None:
            why = state.failure or "the job ended without running"
            self.write(proc, eventlog.shadow_exception(c, proc, when, why))
            self.write(proc, eventlog.aborted(c, proc, when, why))
            return
        usage = eventlog.Usage()
        try:
            info = client.job(self.cluster)
            task = next((t for t in info.tasks if t.index == proc), None)
            if task is not None and task.attempts and task.attempts[-1].usage is not None:
                used = task.attempts[-1].usage
                usage = eventlog.Usage(used.user_cpu_s, used.sys_cpu_s,
                                       memory_kib(used.max_rss_kib, used.cgroup_peak_memory_bytes))
        except DroverError:  # the usage is a nicety: the event is written without it
            pass
        if usage.memory_kib is None and state.sizes is not None:
            usage = replace(usage, memory_kib=state.sizes[0])  # the peak its samples showed
        if usage.memory_kib is not None:  # else no 006: a 0 would undo the sizes the samples showed
            self.write(proc, eventlog.image_size(c, proc, when, usage.memory_kib))
        self.write(proc, eventlog.terminated(c, proc, when, state.exit_code, state.signal, usage, self.request))

    def _bring_back(self, client: Any, proc: int, attempt: int, files: list[str]) -> None:
        """The files the sandbox staged out, into the proc's initialdir, as HTCondor's shadow writes them."""
        iwd = self.iwds.get(proc)
        if not iwd:
            return
        for name in files:
            if os.path.isabs(name) or ".." in name.split("/"):  # only beneath the initialdir
                continue
            data = client.staged_file(self.cluster, proc, attempt, name)
            if data is None:
                continue
            target = os.path.join(iwd, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
            with open(fd, "wb") as file:
                file.write(data)


def run(follower: Follower, grace_s: float) -> int:
    from drover.client.client import Client
    from drover.core.errors import Unreachable

    unreachable_since: float | None = None
    while not follower.done:
        try:
            with Client(timeout_s=WAIT_S + 30) as client:
                while not follower.done:
                    events = client.events(job_id=follower.cluster, after=follower.after, wait_s=follower.wait_s())
                    unreachable_since = None
                    for event in events:
                        follower.handle(client, event)
                        follower.after = event.seq
                    if follower.sample_due is not None and time.monotonic() >= follower.sample_due:
                        follower.sample(client)
        except Unreachable:
            unreachable_since = unreachable_since or time.monotonic()
            if time.monotonic() - unreachable_since > grace_s:
                return 1
            time.sleep(1)
        except DroverError:
            return 1
    return 0


def follower_of(spec: dict[str, Any]) -> Follower:
    request = spec.get("request", {})
    return Follower(
        cluster=int(spec["cluster"]), owner=str(spec["owner"]),
        logs={int(k): str(v) for k, v in spec.get("logs", {}).items() if v},
        iwds={int(k): str(v) for k, v in spec.get("iwds", {}).items()},
        sandbox=bool(spec.get("sandbox")), staged_in=bool(spec.get("staged_in")),
        request=eventlog.Request(int(request.get("cpus", 1)), int(request.get("memory_mb", 0)),
                                 int(request.get("disk_kb", 0)), int(request.get("gpus", 0))),
        procs={int(k): ProcState(held=bool(spec.get("held"))) for k in spec.get("iwds", {})},
        image_size_s=_seconds(IMAGE_SIZE_ENV, DEFAULT_IMAGE_SIZE_S))


def serve(path: str, tag: str, lock: int, look_s: float = LOOK_S,
          follow: Callable[[Follower, float], int] = run) -> int:
    """Take the requests of `tag` in the directory at `path` while holding its lock, each
    cluster followed in a thread; retire once none is left to follow (handoff.py's order).
    Between two looks at the directory it sleeps until a request comes or a cluster's thread
    ends (wakeup.py)."""
    import threading

    from drover.compat.htcondor import handoff
    from drover.compat.htcondor.wakeup import Wakeup

    grace = _seconds(GRACE_ENV, DEFAULT_GRACE_S)
    wakeup = Wakeup(path, look_s)  # watching before the first look: no request comes unseen
    guard = threading.Lock()
    following = 0  # clusters whose threads have not ended

    def follow_then_wake(follower: Follower) -> None:
        nonlocal following
        try:
            follow(follower, grace)
        finally:
            with guard:  # poked before serve may see none left and close the pipe
                following -= 1
                wakeup.poke()

    try:
        while True:
            for spec in handoff.take(path, tag):
                try:
                    follower = follower_of(spec)
                except (KeyError, TypeError, ValueError):
                    continue  # not a request condor_submit wrote
                with guard:
                    following += 1
                threading.Thread(target=follow_then_wake, args=(follower,), name=f"cluster {follower.cluster}",
                                 daemon=True).start()
            with guard:
                busy = following > 0
            if busy:
                wakeup.wait()
                continue
            again = handoff.retire(path, tag, lock)
            if again is None:
                return 0  # nothing waits, or a new follower will take what waits
            lock = again
    finally:
        wakeup.close()


def main() -> int:
    os.chdir("/")
    if len(sys.argv) != 4 or not sys.argv[3].isdigit():
        print("usage: python -m drover.compat.htcondor.follow DIRECTORY TAG LOCK_FD", file=sys.stderr)
        return 2
    return serve(sys.argv[1], sys.argv[2], int(sys.argv[3]))


def _seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if math.isfinite(value) and value > 0 else default


if __name__ == "__main__":
    raise SystemExit(main())
