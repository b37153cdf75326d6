"""A job's event log in a file of the user's (`--event-log FILE`; HTCondor's user log, Flux's
eventlog): every event of the job, one JSON object per line, each exactly once.

Each line carries the event's sequence number. The lines are handed to the owner's event log
writer (event_log_writer.py, a process running as the owner) after the events are committed;
the writer appends only what is past the job's last number in the file. A controller that died
in between catches up when it starts again, by sending the job's events once more: nothing is
written twice and nothing is lost. The controller itself never opens the file.

Writing never holds the controller up: each owner's writer has a queue of its own, served by a
task of its own, and a request that takes longer than WRITE_TIMEOUT_S (a file on a hung
network filesystem) costs only that owner's writer, which is stopped and started afresh.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import pwd
import subprocess
import sys
from collections.abc import Iterable

from drover.core.job import Job
from drover.store.base import EventRecord, Store

log = logging.getLogger("drover.controller")
CATCH_UP_ENDED_WITHIN_S = 3600.0
WRITE_TIMEOUT_S = 10.0
IDLE_S = 60.0  # a writer with nothing to do for this long is stopped
_WRITER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

Request = tuple[str, int, list[tuple[int, str]]]  # path, job id, (seq, line) pairs


class EventLogFiles:
    def __init__(self) -> None:
        self._last_seq: dict[tuple[str, int], int] = {}  # (path, job) → what the writer confirmed
        self._writers: dict[str, _Writer] = {}  # owner → their writer

    def append(self, job: Job, events: list[EventRecord]) -> None:
        path = job.spec.get("event_log")
        if not path:
            return
        last = self._last_seq.get((path, job.id), 0)
        lines = [(e.seq, _line(e)) for e in events if e.seq > last and e.job_id == job.id]
        if lines:
            self._writer(job.owner).put((path, job.id, lines))

    def catch_up(self, store: Store, jobs: Iterable[Job]) -> None:
        """After a restart: send every job's events again; the writers append what is missing."""
        for job in jobs:
            if job.spec.get("event_log"):
                self.append(job, [event for _, event in store.events_of(job.id, 0, 100_000)])

    def confirmed(self, path: str, job_id: int, last: int) -> None:
        key = (path, job_id)
        self._last_seq[key] = max(self._last_seq.get(key, 0), last)

    def _writer(self, owner: str) -> _Writer:
        writer = self._writers.get(owner)
        if writer is None:
            writer = self._writers[owner] = _Writer(owner, self)
        return writer

    async def close(self) -> None:
        for writer in self._writers.values():
            await writer.close()


class _Writer:
    """One owner's event log writer process, started when there is something to write."""

    def __init__(self, owner: str, files: EventLogFiles) -> None:
        self.owner = owner
        self.files = files
        self.queue: asyncio.Queue[Request] = asyncio.Queue()
        self.process: subprocess.Popen[bytes] | None = None
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
            path, job_id, lines = request
            try:
                last = await asyncio.wait_for(self._send(path, job_id, lines), WRITE_TIMEOUT_S)
            except Exception as error:  # the file or the writer failed; the job goes on without it
                log.warning("job %d: cannot append to its event log %s as %s: %s", job_id, path, self.owner, error)
                if not isinstance(error, _Refused):
                    await self.close()  # a writer that timed out or died is started afresh
                continue
            self.files.confirmed(path, job_id, last)

    async def _send(self, path: str, job_id: int, lines: list[tuple[int, str]]) -> int:
        process = self.process or self._start()
        request = json.dumps({"path": path, "job": job_id, "lines": lines}).encode() + b"\n"
        answer = json.loads(await asyncio.to_thread(_exchange, process, request))
        if not answer.get("ok"):
            raise _Refused(answer.get("error", "refused"))
        return int(answer["last"])

    def _start(self) -> subprocess.Popen[bytes]:
        """As the owner when the controller is root; as the controller's own user otherwise,
        which then must be the owner (a personal cluster serves its owner only). Popen, not the
        event loop's subprocess support: it switches uid, gid and groups in C before exec."""
        user = group = None
        groups: list[int] | None = None
        if os.geteuid() == 0:
            entry = pwd.getpwnam(self.owner)
            user, group, groups = entry.pw_uid, entry.pw_gid, os.getgrouplist(self.owner, entry.pw_gid)
        elif pwd.getpwuid(os.geteuid()).pw_name != self.owner:
            raise _Refused(f"this controller cannot write as {self.owner}")
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-m", "drover.controller.event_log_writer"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            cwd="/", env={"PATH": _WRITER_PATH, "LANG": "C.UTF-8"}, close_fds=True,
            user=user, group=group, extra_groups=groups,
        )
        return self.process

    async def close(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        try:
            if process.stdin is not None:
                process.stdin.close()  # the writer ends at EOF
        except OSError:
            pass
        try:
            await asyncio.wait_for(asyncio.to_thread(process.wait), 2)
        except TimeoutError:
            process.kill()
            await asyncio.to_thread(process.wait)


def _exchange(process: subprocess.Popen[bytes], request: bytes) -> bytes:
    """One request and its reply, blocking (in a thread). A writer that is stopped meanwhile
    closes the pipes, which ends the wait."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(request)
    process.stdin.flush()
    reply = process.stdout.readline()
    if not reply:
        raise RuntimeError("the event log writer exited")
    return reply


class _Refused(Exception):
    """The writer answered, and refused: the file is not a regular file, not the owner's..."""


def _line(event: EventRecord) -> str:
    return json.dumps({"seq": event.seq, "time": event.time, "job": event.job_id, "task": event.index,
                       "attempt": event.attempt, "event": event.kind, **event.detail}, separators=(",", ":")) + "\n"
