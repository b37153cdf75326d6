"""The job event log's follower: a small process, started by condor_submit as the user who
submits, that turns the cluster's Drover events into HTCondor's events in the log file(s) the
submit file named, and brings the files a sandboxed job staged out back to its initialdir (as
HTCondor's shadow does on the submit side). It ends once the job has ended.

Why a process of the user's: root never opens, creates or follows a path a user chose
(docs/security.md), and HTCondor's log is such a path. The follower runs with the submitter's
own uid, so the kernel checks each open against the submitter's rights, on a personal cluster
and on a shared one alike; it reads the cluster as any client does, and nothing of the cluster
waits on it.

Protocol: condor_submit writes one JSON object on its stdin, then closes it:
    {"cluster": 12, "owner": "ann", "logs": {"0": "/home/ann/x.log"}, "iwds": {"0": "/home/ann"},
     "sandbox": false, "staged_in": false, "request": {"cpus": 1, "memory_mb": 128, "disk_kb": 0,
     "gpus": 0}}
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from drover.compat.htcondor import eventlog
from drover.compat.htcondor.common import node_address
from drover.core.errors import DroverError

GRACE_ENV = "DROVER_HTCONDOR_FOLLOW_GRACE_S"
DEFAULT_GRACE_S = 300.0  # how long an unreachable cluster is waited for before the follower gives up
WAIT_S = 20  # each long poll of the cluster's events
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
            if not state.lost:
                self.write(proc, eventlog.evicted(c, proc, when, "the job ended to be run again (requeued)"))
        elif kind == "cancelled":
            state.ended = True
            self.write(proc, eventlog.aborted(c, proc, when, f"via condor_rm (by user {self.owner})"))
        elif kind in ENDED:
            state.ended = True
            self._terminated(client, proc, state, when)

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
                usage = eventlog.Usage(used.user_cpu_s, used.sys_cpu_s, used.max_rss_kib)
        except DroverError:  # the usage is a nicety: the event is written without it
            pass
        self.write(proc, eventlog.image_size(c, proc, when, usage.max_rss_kib))
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
                    events = client.events(job_id=follower.cluster, after=follower.after, wait_s=WAIT_S)
                    unreachable_since = None
                    for event in events:
                        follower.handle(client, event)
                        follower.after = event.seq
        except Unreachable:
            unreachable_since = unreachable_since or time.monotonic()
            if time.monotonic() - unreachable_since > grace_s:
                return 1
            time.sleep(1)
        except DroverError:
            return 1
    return 0


def main() -> int:
    spec = json.loads(sys.stdin.read())
    sys.stdin.close()
    os.chdir("/")
    request = spec.get("request", {})
    follower = Follower(
        cluster=int(spec["cluster"]), owner=str(spec["owner"]),
        logs={int(k): str(v) for k, v in spec.get("logs", {}).items() if v},
        iwds={int(k): str(v) for k, v in spec.get("iwds", {}).items()},
        sandbox=bool(spec.get("sandbox")), staged_in=bool(spec.get("staged_in")),
        request=eventlog.Request(int(request.get("cpus", 1)), int(request.get("memory_mb", 0)),
                                 int(request.get("disk_kb", 0)), int(request.get("gpus", 0))),
        procs={int(k): ProcState(held=bool(spec.get("held"))) for k in spec.get("iwds", {})})
    try:
        grace = float(os.environ.get(GRACE_ENV, DEFAULT_GRACE_S))
    except ValueError:
        grace = DEFAULT_GRACE_S
    return run(follower, grace)


if __name__ == "__main__":
    raise SystemExit(main())
