"""The allocator: the controller's loop that asks outer schedulers for allocations while work
waits (`drover alloc`), follows them, and gives back those whose nodes are idle.

Every `tick_s` it takes one step: list each manager's live allocations (squeue, ...), mark
those that ended (an allocation that ended before any of its nodes joined failed: the queue
backs off), forget the nodes of the ended ones, give back allocations idle for their queue's
`idle_timeout_s`, then ask for as many new ones as core/allocations.submissions says. The outer
scheduler's commands run in a thread with a timeout: the event loop never waits for them. Each
allocation gets a join token of its own, good for its workers and revoked when it ends.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pwd
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from drover.cluster.outer.base import OuterScheduler, Refused, Request, by_name, quoted
from drover.controller.security.membership import Membership
from drover.controller.service import ControllerService
from drover.core.allocations import (
    Allocation,
    AllocationState,
    AllocQueue,
    IdleWatch,
    QueueParams,
    Waiting,
    demand,
    failed,
    idle_allocations,
    node_prefix,
    submissions,
    succeeded,
)
from drover.core.errors import BadRequest, Conflict, NotFound
from drover.protocol import api
from drover.scheduler.reasons import PendingReason
from drover.store.base import Changes, EventRecord

log = logging.getLogger("drover.controller")
COMMAND_TIMEOUT_S = 60.0  # an outer scheduler's command that takes longer has failed
TICK_S = 2.0
# The waits that a new node could end: no node has room (or none is up), or jobs ahead wait for it.
WAITS_FOR_ROOM = frozenset({PendingReason.RESOURCES, PendingReason.NO_NODES, PendingReason.PRIORITY,
                            PendingReason.RESERVED})
# A live allocation's reason once a node of it joined (memory of the store's, so that one that
# ends after its nodes left is not taken for one that never started).
JOINED = "a node joined"
TOKEN_QUEUE_WAIT_S = 7 * 86400.0  # how long an allocation may wait in the outer queue: its token's life beyond its time


class AllocationStore(Protocol):
    def add_alloc_queue(self, params: QueueParams, created_at: float, created_by: str) -> AllocQueue: ...

    def alloc_queues(self) -> list[AllocQueue]: ...

    def save_alloc_queue(self, queue: AllocQueue) -> None: ...

    def allocations(self, queue_id: int | None = None) -> list[Allocation]: ...

    def save_allocation(self, item: Allocation) -> None: ...


def run_command(argv: Sequence[str], timeout_s: float = COMMAND_TIMEOUT_S, env: Mapping[str, str] | None = None,
                input_path: str | None = None) -> tuple[int, str, str]:
    """Run an outer scheduler's command: its exit status, output and error (a missing command
    or one that hangs is a failure like any other). `env`: added to this process's environment;
    `input_path`: a file of the controller's own (the batch script) on its standard input."""
    environment = {**os.environ, **env} if env else None
    try:
        if input_path is None:
            done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s,
                                  stdin=subprocess.DEVNULL, env=environment)
        else:
            with open(input_path, "rb") as script:
                done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, stdin=script,
                                      env=environment)
    except FileNotFoundError:
        return 127, "", f"{argv[0]}: command not found"
    except subprocess.TimeoutExpired:
        return 124, "", f"{argv[0]} did not answer within {timeout_s:.0f}s"
    return done.returncode, done.stdout, done.stderr


class Allocator:
    def __init__(self, service: ControllerService, store: AllocationStore, membership: Membership,
                 controller_url: str, work_dir: str, cluster_tag: str, tick_s: float = TICK_S,
                 shared: bool = False) -> None:
        self.service = service
        self.store = store
        self.membership = membership
        self.controller_url = controller_url
        self.work_dir = work_dir  # the batch scripts (mode 0600: they hold the tokens) and their output
        self.cluster_tag = cluster_tag
        self.tick_s = tick_s
        # The allocations run as this controller's user, and so do their nodes: a node that is not
        # root runs only its own user's jobs. A shared cluster's controller that is not root
        # (its service user) would ask for nodes none of its users' jobs could run on.
        self.refusal = ("this shared cluster's controller runs as its service user, so allocations and their "
                        "nodes would too, and could run no user's jobs: allocation queues need a personal "
                        "cluster, or a controller that runs as root") if shared and os.geteuid() != 0 else None
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.queues = {queue.id: queue for queue in store.alloc_queues()}
        self.allocations = {(item.queue_id, item.outer_id): item for item in store.allocations()
                            if item.state.is_live}
        self.idle = IdleWatch()
        self.failure_counts: Counter[int] = Counter()  # by queue, since the controller started: for /metrics
        self.wake = asyncio.Event()
        # Nodes of ended allocations that still ran attempts then: forgotten once their attempts
        # ended (the node reports them as it leaves, execd/leaving.py, or its loss ends them).
        self.ending_nodes: set[str] = set()

    # -- the users' commands (admins: operators, or the owner of a personal cluster) -----------

    def add(self, request: api.AllocQueueRequest, by: str) -> api.AllocQueueInfo:
        if self.refusal is not None:
            raise Conflict(self.refusal)
        params = QueueParams(request.manager, request.time_limit_s, request.workers_per_alloc, request.max_workers,
                             request.backlog, request.idle_timeout_s, request.partition, tuple(request.extra_args),
                             request.name)
        problems = params.problems()
        if problems:
            raise BadRequest("; ".join(problems))
        queue = self.store.add_alloc_queue(params, self.service.clock(), by)
        self.queues[queue.id] = queue
        log.info("%s added allocation queue %d (%s, %s)", by, queue.id, params.manager, quoted(params.extra_args))
        self._event("alloc_queue_added", queue.id, by=by)
        self.wake.set()
        return self.info(queue.id)

    def queue_list(self) -> api.AllocQueueList:
        return api.AllocQueueList(queues=[self.info(queue_id) for queue_id in sorted(self.queues)
                                          if not self.queues[queue_id].removed])

    def info(self, queue_id: int) -> api.AllocQueueInfo:
        queue = self._queue(queue_id)
        params = queue.params
        now = self.service.clock()
        state = ("removed" if queue.removed else "paused" if queue.paused
                 else "backing off" if queue.backoff_until is not None and queue.backoff_until > now else "active")
        allocations = [api.AllocationInfo(outer_id=item.outer_id, workers=item.workers, state=item.state.value,
                                          submitted_at=item.submitted_at, started_at=item.started_at,
                                          ended_at=item.ended_at, reason=item.reason,
                                          nodes=self._nodes_of(params.manager, item.outer_id))
                       for item in self.store.allocations(queue_id)]
        return api.AllocQueueInfo(
            id=queue.id, manager=params.manager, name=params.name, state=state, time_limit_s=params.time_limit_s,
            workers_per_alloc=params.workers_per_alloc, max_workers=params.max_workers, backlog=params.backlog,
            idle_timeout_s=params.idle_timeout_s, partition=params.partition, extra_args=list(params.extra_args),
            created_at=queue.created_at, created_by=queue.created_by, failures=queue.failures,
            backoff_until=queue.backoff_until, last_error=queue.last_error, last_error_at=queue.last_error_at,
            allocations=allocations)

    def pause(self, queue_id: int, paused: bool, by: str) -> api.AllocQueueInfo:
        """Paused: no new allocation is asked for; those there are run on. Resumed: the back-off
        is over too."""
        queue = self._queue(queue_id)
        if queue.removed:
            raise Conflict(f"allocation queue {queue_id} was removed")
        queue = replace(queue, paused=paused, backoff_until=None if not paused else queue.backoff_until,
                        failures=0 if not paused else queue.failures)
        self._save(queue)
        self._event("alloc_queue_paused" if paused else "alloc_queue_resumed", queue_id, by=by)
        self.wake.set()
        return self.info(queue_id)

    async def remove(self, queue_id: int, by: str) -> api.AllocQueueInfo:
        """No new allocation; the live ones are cancelled (their nodes' running jobs go back to the
        queue as node losses do)."""
        queue = self._queue(queue_id)
        self._save(replace(queue, removed=True))
        live = [item for item in self.allocations.values() if item.queue_id == queue_id]
        if live:
            await self._cancel(queue, live, "the allocation queue was removed")
        self._event("alloc_queue_removed", queue_id, by=by)
        return self.info(queue_id)

    def _queue(self, queue_id: int) -> AllocQueue:
        queue = self.queues.get(queue_id)
        if queue is None:
            raise NotFound(f"no allocation queue {queue_id} (`drover alloc list` shows them)")
        return queue

    def _save(self, queue: AllocQueue) -> None:
        self.store.save_alloc_queue(queue)
        self.queues[queue.id] = queue

    def _put(self, item: Allocation) -> None:
        self.store.save_allocation(item)
        if item.state.is_live:
            self.allocations[item.queue_id, item.outer_id] = item
        else:
            self.allocations.pop((item.queue_id, item.outer_id), None)

    def _event(self, kind: str, queue_id: int, **detail: str) -> None:
        changes = Changes()
        changes.events.append(EventRecord(self.service.clock(), kind, detail={"queue": queue_id, **detail}))
        try:
            self.service.shell.record(changes)
        except Exception:
            log.exception("could not record the event %s of allocation queue %d", kind, queue_id)

    # -- the loop --------------------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            try:
                await self.step()
            except Exception:
                log.exception("the allocator's step failed; it tries again")
            try:
                await asyncio.wait_for(self.wake.wait(), self.tick_s)
            except TimeoutError:
                pass
            self.wake.clear()

    async def step(self) -> None:
        for name in list(self.ending_nodes):
            self._forget(name)
        queues = [queue for queue in self.queues.values() if not queue.removed]
        if not queues and not self.allocations:
            return
        await self._follow()
        await self._give_back_idle()
        waiting = self._waiting()
        for queue in queues:
            queue = self.queues[queue.id]
            wanted = submissions(queue, self.allocations.values(), demand(waiting, queue.params), self.service.clock())
            for _ in range(wanted):
                if not await self._submit(queue):
                    break
                queue = self.queues[queue.id]

    def job_name(self, queue_id: int) -> str:
        return f"drover-{self.cluster_tag}-q{queue_id}"

    def _nodes_of(self, manager: str, outer_id: str) -> list[str]:
        prefix = node_prefix(manager, outer_id)
        return sorted(name for name in self.service.state.nodes if name.startswith(prefix))

    def _waiting(self) -> list[Waiting]:
        state = self.service.state
        found = []
        for job_id, why in state.pending_reasons.items():
            item = state.work.items.get(job_id)
            if item is not None and why.reason in WAITS_FOR_ROOM:
                found.append(Waiting(item.pending.count, item.run_limit_s))
        return found

    async def _follow(self) -> None:
        """What the outer schedulers say of the live allocations: started, or gone."""
        by_manager: dict[str, list[Allocation]] = {}
        for item in self.allocations.values():
            by_manager.setdefault(self.queues[item.queue_id].params.manager, []).append(item)
        now = self.service.clock()
        for manager_name, items in by_manager.items():
            manager = by_name(manager_name)
            code, out, err = await asyncio.to_thread(run_command, manager.status(
                f"drover-{self.cluster_tag}-", self.user, [item.outer_id for item in items]))
            if not manager.answered(code, out, err):
                log.warning("%s: could not list the allocations: %s", manager_name, (err or out).strip()[:300])
                continue
            listed = manager.states(out)
            for item in items:
                nodes = self._nodes_of(manager_name, item.outer_id)
                seen = listed.get(item.outer_id)
                queue = self.queues[item.queue_id]
                if nodes and queue.failures:
                    self._save(succeeded(queue))
                if seen is AllocationState.RUNNING and item.state is AllocationState.QUEUED:
                    self._put(replace(item, state=AllocationState.RUNNING, started_at=now))
                    log.info("allocation %s of queue %d runs", item.outer_id, item.queue_id)
                elif seen is None or not seen.is_live:
                    self._ended(item, manager, nodes, "it failed in the outer scheduler"
                                if seen is AllocationState.FAILED else "it ended in the outer scheduler")

    def _ended(self, item: Allocation, manager: OuterScheduler, nodes: list[str], why: str) -> None:
        now = self.service.clock()
        joined = item.reason == JOINED or bool(nodes)  # _give_back_idle marks it when it sees a node
        state = AllocationState.ENDED if joined else AllocationState.FAILED
        if state is AllocationState.FAILED:
            error = f"allocation {item.outer_id} ended before any of its nodes joined" + self._output_tail(item, manager)
            self._save(failed(self.queues[item.queue_id], error, now))
            self.failure_counts[item.queue_id] += 1
            log.warning("allocation queue %d: %s", item.queue_id, error)
            self._event("alloc_failed", item.queue_id, allocation=item.outer_id, error=error[:500])
        self._put(replace(item, state=state, ended_at=now, reason=why if state is AllocationState.ENDED else
                          "it ended before any of its nodes joined"))
        self._revoke(item)
        for name in nodes:
            self._forget(name)

    def _output(self, queue_id: int) -> str:
        """Where an allocation's output goes (%j: its id), as the submit command is told."""
        return os.path.join(self.work_dir, f"{self.job_name(queue_id)}-%j.out")

    def _output_tail(self, item: Allocation, manager: OuterScheduler) -> str:
        path = manager.output_file(self._output(item.queue_id), self.job_name(item.queue_id), item.outer_id)
        try:
            with open(path, "rb") as file:
                file.seek(0, os.SEEK_END)
                file.seek(max(file.tell() - 500, 0))
                tail = file.read().decode(errors="replace").strip()
        except OSError:
            return ""
        return f" (its output, {path}, ends: {tail[-300:]})" if tail else ""

    def _revoke(self, item: Allocation) -> None:
        if item.token_id is not None:
            try:
                self.membership.revoke_token(item.token_id, "the allocator")
            except Exception:
                log.exception("could not revoke the join token %s of allocation %s", item.token_id, item.outer_id)

    def _forget(self, name: str) -> None:
        """A node of an allocation that is over leaves the cluster; one that still runs attempts,
        once they ended (the node ends and reports them as it leaves, or its loss ends them)."""
        node = self.service.state.nodes.get(name)
        if node is None or node.running:
            if node is None:
                self.ending_nodes.discard(name)
            else:
                self.ending_nodes.add(name)  # tried again at each step
            return
        self.ending_nodes.discard(name)
        try:
            self.service.forget_node(name, lambda: self.membership.store.node_left(name, self.service.clock()))
        except Exception as error:
            log.warning("could not forget node %s: %s", name, error)

    async def _give_back_idle(self) -> None:
        now = self.service.clock()
        nodes_of: dict[str, list[str]] = {}
        busy: dict[str, bool] = {}
        for item in self.allocations.values():
            names = self._nodes_of(self.queues[item.queue_id].params.manager, item.outer_id)
            nodes_of[item.outer_id] = names
            if names and item.reason != JOINED:
                self._put(replace(item, reason=JOINED))
            for name in names:
                node = self.service.state.nodes[name]
                busy[name] = bool(node.running or node.holders)
        self.idle.update(busy, now)
        for queue in list(self.queues.values()):
            live = [item for item in self.allocations.values() if item.queue_id == queue.id]
            ending = set(idle_allocations(live, nodes_of, self.idle, queue.params.idle_timeout_s, now))
            if ending:
                await self._cancel(queue, [item for item in live if item.outer_id in ending],
                                   f"its nodes were idle for {queue.params.idle_timeout_s:g}s")

    async def _cancel(self, queue: AllocQueue, items: list[Allocation], why: str) -> None:
        manager = by_name(queue.params.manager)
        for item in items:
            for name in self._nodes_of(queue.params.manager, item.outer_id):
                self._forget(name)
        code, out, err = await asyncio.to_thread(run_command, manager.cancel([item.outer_id for item in items]))
        if code != 0:
            log.warning("%s: could not cancel %s: %s", manager.name, ", ".join(item.outer_id for item in items),
                        (err or out).strip()[:300])
        now = self.service.clock()
        for item in items:
            self._put(replace(item, state=AllocationState.ENDED, ended_at=now, reason=why))
            self._revoke(item)
            log.info("allocation %s of queue %d ends: %s", item.outer_id, queue.id, why)

    async def _submit(self, queue: AllocQueue) -> bool:
        """Ask for one allocation; False if the outer scheduler refused (the queue backs off)."""
        params = queue.params
        manager = by_name(params.manager)
        created = self.membership.create_token(
            api.TokenRequest(ttl_s=params.time_limit_s + TOKEN_QUEUE_WAIT_S, uses=params.workers_per_alloc),
            f"allocation queue {queue.id}")
        token_id = created.info.id
        name = self.job_name(queue.id)
        os.makedirs(self.work_dir, mode=0o700, exist_ok=True)
        script = os.path.join(self.work_dir, f"{name}-{token_id}.sh")
        worker = [sys.executable, "-m", "drover", "alloc", "worker", self.controller_url, "--manager", params.manager,
                  "--time-limit", f"{params.time_limit_s:g}"]
        text = manager.script(worker, params.workers_per_alloc, {"DROVER_JOIN_TOKEN": created.token})
        descriptor = os.open(script, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(text)
        request = Request(name, params.workers_per_alloc, params.time_limit_s, script, self._output(queue.id),
                          params.partition, params.extra_args, {"DROVER_JOIN_TOKEN": created.token})
        code, out, err = await asyncio.to_thread(run_command, manager.submit(request), env=request.environment,
                                                 input_path=script if manager.script_on_stdin else None)
        now = self.service.clock()
        try:
            if code != 0:
                raise Refused((err or out).strip()[:1000] or f"exit status {code}")
            outer_id = manager.submitted_id(out)
        except Refused as refused:
            self.membership.revoke_token(token_id, "the allocator")
            os.unlink(script)
            error = f"{manager.name} refused the allocation: {refused}"
            self._save(failed(queue, error, now))
            self.failure_counts[queue.id] += 1
            log.warning("allocation queue %d: %s (next try in %.0fs)", queue.id, error,
                        (self.queues[queue.id].backoff_until or now) - now)
            self._event("alloc_failed", queue.id, error=error[:500])
            return False
        item = Allocation(queue.id, outer_id, params.workers_per_alloc, AllocationState.QUEUED, now, token_id)
        self._put(item)
        log.info("allocation queue %d: asked %s for allocation %s (%d node(s), %gs)", queue.id, manager.name,
                 outer_id, params.workers_per_alloc, params.time_limit_s)
        self._event("alloc_submitted", queue.id, allocation=outer_id)
        if self.queues[queue.id].removed:  # removed while sbatch ran: this one ends too
            await self._cancel(self.queues[queue.id], [item], "the allocation queue was removed")
            return False
        return True
