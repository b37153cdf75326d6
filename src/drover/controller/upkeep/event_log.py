"""A job's event log in a file of the user's (`--event-log FILE`; HTCondor's user log, Flux's
eventlog): every event of the job, one JSON object per line, each exactly once.

Each line carries the event's sequence number. The lines are handed to an event log writer
running as the job's owner (event_log_writer.py) after the events are committed; the writer
appends only what is past the job's last number in the file. A controller that died in between
catches up when it starts again, by sending the job's events once more: nothing is written twice
and nothing is lost. The controller itself never opens the file.

Whose writer: a controller that can become the owner (it runs as root, or as the owner: a
personal cluster) starts the owner's writer itself. One that cannot (a shared cluster's, which
runs as an unprivileged service user) sends the lines over the node channel to the node on the
host the job was submitted from, which starts the same writer as the owner and answers
(execd/event_logs.py). That node is chosen when the job is submitted (`node_for`: on the Unix
socket, a node of this host; over TLS, the node whose channel comes from the request's address)
and kept with the job; with none connected, a job with an event log is refused. What cannot reach
the node (it is not connected, as after a restart of the controller, or did not answer) is sent
again, with all of the job's events, when it says hello. The node is sent
the job's signature with the lines, so a node that runs signed jobs only appends to nothing but
the file the owner signed. A refusal is recorded once as the job's `event_log_failed` event.

Writing never holds the controller up: each owner's writer has a queue of its own, served by a
task of its own, and a request that takes longer than WRITE_TIMEOUT_S (a file on a hung
network filesystem) costs only that owner's writer, which is stopped and started afresh.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import pwd
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from drover.cluster.signing import signed_request
from drover.controller.nodes.node_channels import NodeChannels
from drover.core.errors import Conflict, Unavailable
from drover.core.job import Job, JobPayload
from drover.owner_process import OwnerProcess
from drover.protocol.node_channel import AppendEventLog, EventLogAppended
from drover.store.base import EventRecord, Store

log = logging.getLogger("drover.controller")
CATCH_UP_ENDED_WITHIN_S = 3600.0
WRITE_TIMEOUT_S = 10.0
IDLE_S = 60.0  # a writer with nothing to do for this long is stopped
WRITER = "drover.controller.upkeep.event_log_writer"

Request = tuple[str, Job, list[tuple[int, str]]]  # path, job, (seq, line) pairs


def signed_fields(job: Job, payload: JobPayload) -> dict[str, Any]:
    """What the job's owner signed, as the controller makes it of the job's spec and its payload
    (the store holds them apart): the digest its credential carries."""
    return dict(signed_request({**msgspec.structs.asdict(job.spec), **payload, "name": job.name}))


class EventLogFiles:
    def __init__(self, channels: NodeChannels, record_refusal: Callable[[int, str, str], None] | None = None,
                 payload_of: Callable[[int], JobPayload | None] | None = None) -> None:
        """`record_refusal(job, path, why)`: keeps a writer's refusal with the job (an event);
        `payload_of(job)`: the job's script, environment and staged files, as the store holds
        them (what its owner signed covers them, and the working set holds none)."""
        self.channels = channels
        self.record_refusal = record_refusal
        self.payload_of = payload_of
        self.me = pwd.getpwuid(os.geteuid()).pw_name
        self._last_seq: dict[tuple[str, int], int] = {}  # (path, job) → what the writer confirmed
        self._writers: dict[tuple[str, str | None], _Writer] = {}  # (owner, node or None: ours) → writer
        self._refused: set[tuple[str, int]] = set()  # (path, job) whose refusal is recorded
        self._waiting: dict[str, dict[int, Job]] = {}  # node → the jobs whose events wait for it
        self._answers: dict[int, tuple[str, asyncio.Future[EventLogAppended]]] = {}  # request → (node, answer)
        self._requests = itertools.count(1)

    def writes_itself(self, owner: str) -> bool:
        """Whether this controller can start `owner`'s writer: as root, or as the owner."""
        return os.geteuid() == 0 or owner == self.me

    def node_for(self, owner: str, submitted_from: str | None) -> str | None:
        """The node to write the event log of a job `owner` submits from `submitted_from` (the
        address of the request's peer over TLS; None: this host, on the Unix socket), or None when
        this controller writes it itself. Refused when no node of that host is connected."""
        if self.writes_itself(owner):
            return None
        for name in sorted(self.channels.connected()):
            channel = self.channels.channel(name)
            if channel is not None and channel.host == submitted_from:  # None == None: a node of this host
                return name
        host = f"the host at {submitted_from}" if submitted_from else "this host"
        raise Conflict(f"--event-log: this cluster's controller runs as {self.me} and cannot write as {owner}, so "
                       f"the node on the host a job is submitted from writes its event log, and no node of {host} "
                       "is connected; submit without --event-log, or once that node is up")

    def append(self, job: Job, events: list[EventRecord]) -> None:
        path = job.spec.event_log
        if not path:
            return
        last = self._last_seq.get((path, job.id), 0)
        lines = [(e.seq, _line(e)) for e in events if e.seq > last and e.job_id == job.id]
        if not lines:
            return
        node = None
        if not self.writes_itself(job.owner):
            node = job.event_log_node
            if node is None:  # submitted while the controller still ran as root (an earlier Drover)
                self.refused(job.id, path, f"this controller runs as {self.me}, and no node was chosen to write "
                                            f"{job.owner}'s event log when the job was submitted")
                return
            if self.channels.channel(node) is None:
                self.wait_for_node(node, job)
                return
        key = (job.owner, node)
        writer = self._writers.get(key)
        if writer is None:
            writer = self._writers[key] = _Writer(job.owner, node, self)
        writer.put((path, job, lines))

    def catch_up(self, store: Store, jobs: Iterable[Job]) -> None:
        """After a restart: send every job's events again; the writers append what is missing.
        The jobs whose node writes them wait for it to connect (no node is, yet)."""
        for job in jobs:
            if job.spec.event_log:
                self.append(job, [event for _, event in store.events_of(job.id, 0, 100_000)])

    def wait_for_node(self, node: str, job: Job) -> None:
        """The node that writes the job's event log is not connected, or did not answer: all the
        job's events are sent again when it connects."""
        self._waiting.setdefault(node, {})[job.id] = job

    def node_gone(self, node: str) -> None:
        """The node's channel closed: what it was asked fails now (and waits for it to be back)."""
        for asked, answer in list(self._answers.values()):
            if asked == node and not answer.done():
                answer.set_exception(Unavailable(f"node {node} went away before it answered"))

    def node_connected(self, node: str, store: Store) -> None:
        """The node said hello: the jobs waiting for it are caught up."""
        self.catch_up(store, self._waiting.pop(node, {}).values())

    def confirmed(self, path: str, job_id: int, last: int) -> None:
        key = (path, job_id)
        self._last_seq[key] = max(self._last_seq.get(key, 0), last)

    def refused(self, job_id: int, path: str, why: str) -> None:
        """Logged each time; kept with the job once (the event would be refused in turn)."""
        log.warning("job %d: cannot append to its event log %s: %s", job_id, path, why)
        if (path, job_id) not in self._refused and self.record_refusal is not None:
            self._refused.add((path, job_id))
            self.record_refusal(job_id, path, why)

    async def ask_node(self, node: str, path: str, job: Job, lines: list[tuple[int, str]]) -> EventLogAppended:
        """The node's answer to one request: the lines, and the job's signature with what it covers."""
        if self.channels.channel(node) is None:
            raise Unavailable(f"node {node}, which writes the job's event log, is not connected")
        request = next(self._requests)
        answer: asyncio.Future[EventLogAppended] = asyncio.get_running_loop().create_future()
        self._answers[request] = (node, answer)
        credential = job.spec.credential
        signed = None
        if credential:
            payload = self.payload_of(job.id) if self.payload_of is not None else None
            if payload is None:
                raise Unavailable(f"the store holds no script for job {job.id}")
            signed = signed_fields(job, payload)
        self.channels.send(node, AppendEventLog(request, job.id, job.owner, path, lines, credential, signed))
        try:
            return await asyncio.wait_for(answer, WRITE_TIMEOUT_S)
        finally:
            self._answers.pop(request, None)

    def take(self, node: str, messages: Sequence[Any]) -> None:
        """Deliver what `node` answered to event log requests (and leave its other messages)."""
        for message in messages:
            if isinstance(message, EventLogAppended):
                waiting = self._answers.get(message.request)
                if waiting is not None and waiting[0] == node and not waiting[1].done():  # a node answers for itself
                    waiting[1].set_result(message)

    async def close(self) -> None:
        for writer in self._writers.values():
            await writer.close()


class _Writer:
    """One owner's event log writes, one at a time and in order: to a writer process this
    controller starts as the owner when there is something to write (`node` None), or to the
    one `node` starts."""

    def __init__(self, owner: str, node: str | None, files: EventLogFiles) -> None:
        self.owner = owner
        self.node = node
        self.files = files
        self.queue: asyncio.Queue[Request] = asyncio.Queue()
        self.process: OwnerProcess | None = None
        self.task: asyncio.Task[None] | None = None

    def put(self, request: Request) -> None:
        self.queue.put_nowait(request)
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._serve())

    async def _serve(self) -> None:
        while True:
            try:
                request = await asyncio.wait_for(self.queue.get(), IDLE_S)
            except TimeoutError:
                await self.close()
                if self.queue.empty():  # nothing came while it closed: done (put starts us again)
                    return
                continue
            path, job, lines = request
            try:
                last = await asyncio.wait_for(self._send(path, job, lines), WRITE_TIMEOUT_S)
            except _Refused as refusal:  # the writer (or the node) answered: the file is not to be written
                self.files.refused(job.id, path, f"{refusal} (written as {self.owner}{self._where()})")
                continue
            except Exception as error:  # the writer or the node failed; the job goes on without it
                log.warning("job %d: cannot append to its event log %s as %s%s: %s", job.id, path, self.owner,
                            self._where(), error or "timed out")
                if self.node is not None:
                    self.files.wait_for_node(self.node, job)  # sent again when the node is back
                await self.close()  # a writer that timed out or died is started afresh
                continue
            self.files.confirmed(path, job.id, last)

    async def _send(self, path: str, job: Job, lines: list[tuple[int, str]]) -> int:
        if self.node is not None:
            answer = await self.files.ask_node(self.node, path, job, lines)
            if answer.error is not None:
                raise _Refused(answer.error)
            return answer.last
        reply = await self._process().ask({"path": path, "job": job.id, "lines": lines}, WRITE_TIMEOUT_S)
        if not reply.get("ok"):
            raise _Refused(reply.get("error", "refused"))
        return int(reply["last"])

    def _process(self) -> OwnerProcess:
        """As the owner when the controller is root; as the controller's own user otherwise,
        which then is the owner (EventLogFiles.writes_itself)."""
        if self.process is None:
            if os.geteuid() == 0:
                entry = pwd.getpwnam(self.owner)
                self.process = OwnerProcess(WRITER, entry.pw_uid, entry.pw_gid,
                                            os.getgrouplist(self.owner, entry.pw_gid))
            else:
                self.process = OwnerProcess(WRITER)
        return self.process

    def _where(self) -> str:
        return f" on node {self.node}" if self.node else ""

    async def close(self) -> None:
        if self.process is not None:
            await self.process.close()


class _Refused(Exception):
    """The writer answered, and refused: the file is not a regular file, not the owner's, not
    the one the owner signed..."""


def _line(event: EventRecord) -> str:
    return json.dumps({"seq": event.seq, "time": event.time, "job": event.job_id, "task": event.index,
                       "attempt": event.attempt, "event": event.kind, **event.detail}, separators=(",", ":")) + "\n"
