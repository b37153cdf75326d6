"""The node's end of a job's event log (`--event-log FILE`), for a controller that cannot write it:
one that runs as an unprivileged service user cannot become the job's owner, so it sends the
lines to the node on the host the job was submitted from (controller/upkeep/event_log.py), and this
node appends them with the controller's own writer (controller/upkeep/event_log_writer.py), started as
the owner with their uid, gid and groups: the kernel checks every open against the owner's rights,
and the writer skips what the file holds already (exactly once, as ever).

A node that runs signed jobs only (`[execd] require_signed_jobs`) appends only to the event log
the owner signed: the controller sends the job's credential and what it covers, checked once per
job, owner and path (execd/signatures.py); a refusal goes back to the controller, which logs it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import Any

from drover.execd.identities import Identities
from drover.execd.signatures import SignedJobs
from drover.owner_process import OwnerProcesses
from drover.protocol.node_channel import AppendEventLog, EventLogAppended

log = logging.getLogger("drover.execd")
WRITER = "drover.controller.upkeep.event_log_writer"  # the same writer the controller starts when it can
WRITE_TIMEOUT_S = 10.0  # a file on a hung network filesystem costs that owner's writer only
IDLE_S = 60.0  # a writer with nothing to do for this long is stopped
VERIFIED = 10_000  # (job, owner, path) whose signature was checked, the oldest forgotten first


class NodeEventLogs:
    def __init__(self, send: Callable[[Any], None], signed_jobs: SignedJobs | None = None) -> None:
        """`signed_jobs`: this node's check of its jobs' signatures, if it runs signed jobs only."""
        self.send = send
        self.signed_jobs = signed_jobs
        self.identities = Identities()
        self._writers = OwnerProcesses(WRITER, IDLE_S)  # one per owner
        self._verified: OrderedDict[tuple[int, str, str], None] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()

    def append(self, order: AppendEventLog) -> None:
        self._spawn(self._append(order))

    async def _append(self, order: AppendEventLog) -> None:
        identity, why = self.identities.for_job(order.owner)
        if why is None:
            why = self._refusal(order)
        if why is not None:
            self.send(EventLogAppended(order.request, error=why))
            return
        request = {"path": order.path, "job": order.job, "lines": order.lines}
        try:
            writer = (self._writers.of(identity["uid"], identity["gid"], identity["groups"]) if identity is not None
                      else self._writers.of(None))
            answer = await writer.ask(request, WRITE_TIMEOUT_S)
        except Exception as error:  # timed out (the writer is stopped), or could not start as the owner
            self.send(EventLogAppended(order.request, error=f"the node's event log writer failed: {error or 'timed out'}"))
            return
        if answer.get("ok"):
            self.send(EventLogAppended(order.request, last=int(answer["last"])))
        else:
            self.send(EventLogAppended(order.request, error=str(answer.get("error", "refused"))))

    def _refusal(self, order: AppendEventLog) -> str | None:
        """On a node that runs signed jobs only: why `path` is not the job's signed event log."""
        if self.signed_jobs is None:
            return None
        key = (order.job, order.owner, order.path)
        if key in self._verified:
            return None
        why = self.signed_jobs.event_log_refusal(order.job, order.owner, order.path, order.credential, order.signed)
        if why is None:
            self._verified[key] = None
            while len(self._verified) > VERIFIED:
                self._verified.popitem(last=False)
        return why

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        await self._writers.close()
