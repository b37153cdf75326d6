"""The controller's shell: runs handlers, commits their changes, then carries out their effects.

Every state change reaches the store (one transaction per handler) before any reply, order or
notification leaves. If a handler or a commit fails half way, what it may have changed is rebuilt
from the store, which holds only whole transactions: for a user's request, the jobs it named (and
the ones it was adding); for anything else, the whole working set.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from drover.config_schema import QueueSection
from drover.controller import staged_files
from drover.controller.effects import JobEnded, Outcome, SendMail, SendToNode
from drover.controller.event_log import CATCH_UP_ENDED_WITHIN_S, EventLogFiles
from drover.controller.handlers.actions import MayTouch, act
from drover.controller.handlers.dispatch import OrderOptions, schedule
from drover.controller.handlers.node_reports import (
    on_node_connected,
    on_node_disconnected,
    on_nodes_lost,
    on_reports,
    resume_node,
)
from drover.controller.handlers.submit import submit
from drover.controller.node_channels import NodeChannel, NodeChannels
from drover.controller.state import ControllerState
from drover.core.errors import Conflict, DroverError, NotFound
from drover.core.ids import parse_job_ref
from drover.core.limits import Limits
from drover.core.node_state import NodeState
from drover.protocol.api import ActionResult, JobSubmission
from drover.protocol.node_channel import Hello, NodeMessage, StagedOut
from drover.store.base import Changes, EventRecord, JobFilter, Store
from drover.store.faults import StoreFault

log = logging.getLogger("drover.controller")
REMEMBERED_SUBMISSIONS = 10_000  # request keys kept (in memory: a controller restart forgets them)


@dataclass(frozen=True, slots=True)
class Settings:
    kill_grace_s: float = 10.0  # between the warning signal and SIGKILL when a job is stopped
    queues: Mapping[str, QueueSection] = field(default_factory=dict)  # [queues.NAME] of drover.toml
    files_dir: str = ""  # where staged-out files are kept until fetched
    smtp_host: str = "localhost"
    smtp_port: int = 25
    mail_tries: int = 5
    requeue_held: bool = False  # a job requeued for a node's failing prolog is held
    node_timeout_s: float = 300.0  # a node down this long has lost its running jobs (NODE_FAIL)
    limits: Limits = field(default_factory=Limits)  # what one request and one user may ask


@dataclass(frozen=True, slots=True)
class RequestScope:
    """What a user's request may change: the jobs it names, and jobs it adds from `next_job_id` on."""

    job_ids: frozenset[int]
    next_job_id: int


class ControllerService:
    def __init__(self, store: Store, settings: Settings, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.settings = settings
        self.orders = OrderOptions(settings.kill_grace_s, settings.queues)
        self.clock = clock
        self.channels = NodeChannels()
        self.started_at = clock()
        self._waiters: dict[int, list[asyncio.Future[None]]] = {}
        self._submitted: OrderedDict[tuple[str, str], tuple[int, ...]] = OrderedDict()  # request keys
        self._schedule_requested = False
        self._new_events = asyncio.Event()
        self.event_logs = EventLogFiles()
        self.state = self._load()
        recently = clock() - CATCH_UP_ENDED_WITHIN_S
        self.event_logs.catch_up(store, [*self.state.jobs.values(),
                                         *store.list_ended_jobs(JobFilter(ended_since=recently, limit=100_000))])

    def _load(self) -> ControllerState:
        state = ControllerState.from_working_set(self.store.load_working_set())
        # No node is connected to a controller that just started; each says hello when it is.
        changes = Changes()
        for node in state.nodes.values():
            if node.state not in (NodeState.DOWN, NodeState.ERROR) and node.name not in self.channels.connected():
                node.state = NodeState.DOWN
                changes.node(node)
            # A controller that just started gives every node a full node_timeout_s to say hello.
            node.last_seen = self.clock()
        if changes:
            self.store.commit(changes)
        return state

    # -- the shell -----------------------------------------------------------------------------

    def _run(self, handler: Callable[[], Outcome], scope: RequestScope | None = None) -> Outcome:
        """`scope`: for a user's request, what it may change; a failure then restores just that,
        so one bad request never costs every node its channel and everyone a reload."""
        try:
            outcome = handler()
            if outcome.changes:
                self.store.commit(outcome.changes)
                if outcome.changes.events:
                    self._events_committed(outcome.changes)
        except StoreFault as fault:
            log.error("%s", fault)
            # The commit failed (the disk is full, the store read-only or locked): nothing was
            # acknowledged. The working set goes back to what the store holds, the controller
            # keeps running, and the caller learns the cause (503).
            if scope is None or not self._restore(scope):
                self.state = self._load()
                self._reconnect_nodes()
            raise
        except DroverError:
            raise  # a refusal: handlers check everything before they change anything
        except Exception:
            if scope is not None and self._restore(scope):
                log.exception("a request failed; its jobs were restored from the store")
                raise
            log.exception("a handler failed; reloading the working set from the store")
            self.state = self._load()
            self._reconnect_nodes()
            raise
        self._carry_out(outcome)
        return outcome

    def _restore(self, scope: RequestScope) -> bool:
        """Put the jobs of a failed request back as the store has them; False if the working set
        still contradicts itself afterwards (then only a full reload will do)."""
        state = self.state
        added = range(scope.next_job_id, state.next_job_id)
        state.next_job_id = scope.next_job_id
        for job_id in {*scope.job_ids, *added}:
            state.pending_reasons.pop(job_id, None)
            state.ended_states.pop(job_id, None)
            stored = self.store.load_job(job_id)
            before = state.remove_job(job_id)
            if stored is None or stored.ended_at is not None:
                for task in before.tasks.values() if before is not None else ():
                    state.attempts.pop((job_id, task.index, task.attempt), None)
                continue
            state.add_job(stored)
            missing = [task for task in stored.tasks.values()
                       if task.attempt and (job_id, task.index, task.attempt) not in state.attempts]
            if missing:
                attempts = {(a.index, a.number): a for a in self.store.attempts_of(job_id)}
                for task in missing:
                    attempt = attempts.get((task.index, task.attempt))
                    if attempt is not None:
                        state.attempts[job_id, task.index, task.attempt] = attempt
        try:
            state.check_invariants()
        except AssertionError:
            return False
        return True

    def _events_committed(self, changes: Changes) -> None:
        self._new_events.set()
        self._new_events = asyncio.Event()
        jobs = {job.id: job for job in changes.new_jobs} | changes.jobs
        by_job: dict[int, list[EventRecord]] = {}
        for event in changes.events:
            if event.job_id is not None:
                by_job.setdefault(event.job_id, []).append(event)
        for job_id, events in by_job.items():
            job = jobs.get(job_id) or self.state.jobs.get(job_id)
            if job is not None and job.spec.get("event_log"):
                self.event_logs.append(job, events)

    def resume_node(self, name: str) -> None:
        self._run(lambda: resume_node(self.state, name, self.clock()))

    def events_marker(self) -> asyncio.Event:
        """Set when the next events are committed. Taken before a read that runs off the loop,
        it also tells of a commit that happened while the read ran (no lost wake-up)."""
        return self._new_events

    async def wait_for_events(self, timeout_s: float, marker: asyncio.Event | None = None) -> None:
        """Return when new events are committed (since `marker` was taken), or after `timeout_s`."""
        try:
            await asyncio.wait_for((marker or self._new_events).wait(), timeout_s)
        except TimeoutError:
            pass

    def _carry_out(self, outcome: Outcome) -> None:
        for effect in outcome.effects:
            if isinstance(effect, SendToNode):
                self.channels.send(effect.node, effect.message)
            elif isinstance(effect, SendMail):
                asyncio.get_running_loop().create_task(self._mail(effect))
            elif isinstance(effect, JobEnded):
                for waiter in self._waiters.pop(effect.job_id, []):
                    if not waiter.done():
                        waiter.set_result(None)
        if outcome.reschedule:
            self.request_schedule()

    async def _mail(self, message: SendMail) -> None:
        """Send in a thread, retrying with back-off; the outcome becomes an event. At most
        once: a controller that dies before sending does not send it later."""
        from drover import mail

        error: Exception | None = None
        for attempt in range(self.settings.mail_tries):
            try:
                await asyncio.to_thread(mail.send, self.settings.smtp_host, self.settings.smtp_port,
                                        message.to, message.subject, message.body)
            except Exception as failure:
                error = failure
                await asyncio.sleep(min(0.5 * 2**attempt, 30))
            else:
                error = None
                break
        changes = Changes()
        if error is None:
            changes.event(self.clock(), "mail_sent", message.job_id, to=message.to, subject=message.subject)
        else:
            changes.event(self.clock(), "mail_failed", message.job_id, to=message.to, error=str(error))
        self._run(lambda: Outcome(changes=changes))

    def _reconnect_nodes(self) -> None:
        """After a reload, make every node say hello again, so orders are rebuilt from the store."""
        asyncio.get_running_loop().create_task(self.channels.close_all())

    async def watch_nodes(self) -> None:
        """Every few seconds: nodes down for longer than node_timeout_s lose their jobs."""
        while True:
            await asyncio.sleep(min(max(self.settings.node_timeout_s / 4, 0.2), 30))
            try:
                self._run(lambda: on_nodes_lost(self.state, self.clock(), self.settings.node_timeout_s))
            except Exception:
                log.exception("checking for lost nodes failed")

    def request_schedule(self) -> None:
        """Plan once at the end of this loop turn, however many changes asked for it."""
        if not self._schedule_requested:
            self._schedule_requested = True
            asyncio.get_running_loop().call_soon(self._schedule)

    def _schedule(self) -> None:
        self._schedule_requested = False
        try:
            self._run(lambda: schedule(self.state, self.clock(), self.store, self.orders))
        except Exception:
            log.exception("scheduling failed")

    # -- commands from users ------------------------------------------------------------------

    def submit(self, jobs: list[JobSubmission], owner: str, request_key: str | None = None) -> list[int]:
        """`request_key`: the client's name for this submission; the same key from the same owner
        again gets the ids it got the first time (a retried request makes no second job)."""
        if request_key is not None and (owner, request_key) in self._submitted:
            return list(self._submitted[owner, request_key])
        ids: list[int] = []

        def handler() -> Outcome:
            outcome, new_ids = submit(self.state, jobs, owner, self.clock(), self.store, set(self.settings.queues),
                                      self.settings.limits)
            ids.extend(new_ids)
            return outcome

        self._run(handler, RequestScope(frozenset(), self.state.next_job_id))
        if request_key is not None:
            self._submitted[owner, request_key] = tuple(ids)
            while len(self._submitted) > REMEMBERED_SUBMISSIONS:
                self._submitted.popitem(last=False)
        return ids

    def act(self, action: str, refs: list[str], may_touch: MayTouch,
            signal_name: str | None = None, priority: int | None = None) -> list[ActionResult]:
        """`may_touch`: the caller's permission, asked of each job the refs name."""
        results: list[ActionResult] = []

        def handler() -> Outcome:
            outcome, found = act(self.state, action, refs, may_touch, self.clock(), self.store, signal_name,
                                 priority)
            results.extend(found)
            return outcome

        self._run(handler, RequestScope(frozenset(_job_ids(refs)), self.state.next_job_id))
        return results

    async def wait_for_end(self, job_id: int, timeout_s: float) -> bool:
        """True once the job has ended (at once if it had), False if `timeout_s` passed first."""
        if job_id not in self.state.jobs:
            return True
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(job_id, []).append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout_s)
            return True
        except TimeoutError:
            return False
        finally:
            waiters = self._waiters.get(job_id)
            if waiters and waiter in waiters:
                waiters.remove(waiter)

    # -- what nodes say -----------------------------------------------------------------------

    def node_connected(self, channel: NodeChannel, hello: Hello) -> NodeChannel | None:
        previous = self.channels.attach(channel)
        self._run(lambda: on_node_connected(self.state, hello, self.clock(), self.orders))
        return previous

    def node_messages(self, node: str, messages: list[NodeMessage]) -> None:
        reports = [m for m in messages if not isinstance(m, Hello) and self._kept(m)]
        if reports:
            self._run(lambda: on_reports(self.state, node, reports, self.clock(), self.settings.requeue_held))

    def _kept(self, message: NodeMessage) -> bool:
        """Staged-out files are on disk before they are acknowledged. Files that cannot be kept
        (the controller's disk is full) are not acknowledged: the node tries again, and after
        its stage_out_tries gives them up, in an event that says so; the job goes on."""
        if not isinstance(message, StagedOut):
            return True
        try:
            staged_files.keep(self.settings.files_dir, message)
            return True
        except OSError as error:
            log.error("cannot keep the files attempt %s staged out, in %s: %s", message.attempt,
                      self.settings.files_dir, error.strerror or error)
            return False

    def node_disconnected(self, channel: NodeChannel) -> None:
        if self.channels.detach(channel):
            self._run(lambda: on_node_disconnected(self.state, channel.node, self.clock()))

    def forget_node(self, name: str, forget_in_store: Callable[[], None]) -> None:
        """A node that left the cluster: refused while it runs attempts. `forget_in_store`
        removes it from the store (and revokes its certificates) before the working set forgets
        it and its channel is closed."""
        node = self.state.nodes.get(name)
        if node is None:
            raise NotFound(f"no node named {name} (`drover nodes` lists them)")
        if node.running:
            raise Conflict(f"node {name} still runs {node.running} attempt(s); cancel them or wait for them "
                           "to end before it leaves")
        forget_in_store()
        channel = self.channels.channel(name)
        if channel is not None:
            self.channels.detach(channel)
            asyncio.get_running_loop().create_task(channel.close())

        def handler() -> Outcome:
            outcome = Outcome()
            del self.state.nodes[name]
            outcome.changes.event(self.clock(), "node_left", node=name)
            return outcome

        self._run(handler)


def _job_ids(refs: list[str]) -> list[int]:
    """The jobs the refs name (a malformed ref names none: it is refused on its own)."""
    ids = []
    for ref in refs:
        try:
            ids.append(parse_job_ref(ref)[0])
        except DroverError:
            pass
    return ids
