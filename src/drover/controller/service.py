"""The controller's shell: runs handlers, commits their changes, then carries out their effects.

Every state change reaches the store before any reply, order or notification leaves: one
transaction per handler, except for the nodes' reports: the frames of them that come in one loop
turn, and the planner's pass they ask for, are handled at the turn's end and committed in one
transaction (group commit, `_handle_group`), with the same guarantees. If a handler or a commit
fails half way, what it may have changed is put back as the store has it, which holds only whole
transactions: the jobs it named (and the ones it was adding), the jobs and nodes its outcome
changed; never the whole working set, and no node's channel is closed for it. Only if the
working set still contradicts itself afterwards is it reloaded whole (and every node asked to
say hello again).

Handlers that work through many jobs (a node's reports, the planner's starts, a lost node's
attempts, a node's hello) handle each job apart: an exception while handling one job sets that
job aside (Outcome.fault), and the shell puts it back as the store has it and fails it, with the
reason, in a transaction of its own (`_fail`); the other jobs go on.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import shutil
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, field

from drover.config_schema import (
    EnvironmentSection,
    ParallelEnvironmentSection,
    QueueSection,
    SchedulerSection,
)
from drover.controller import pe_tasks, staged_files
from drover.controller.auth import Caller, Policy
from drover.controller.effects import JobEnded, JobFault, Outcome, SendMail, SendToNode
from drover.controller.event_log import CATCH_UP_ENDED_WITHIN_S, EventLogFiles
from drover.controller.fairshare import DecayedUsage
from drover.controller.faults import EXIT_AFTER_SUBMIT, NO_FAULTS, Faults
from drover.controller.handlers import queue_suspension, queues
from drover.controller.handlers.actions import MayTouch, act
from drover.controller.handlers.dispatch import (
    OrderOptions,
    queue_nice,
    queue_of,
    schedule,
    start_order,
)
from drover.controller.handlers.node_reports import (
    Report,
    drain_node,
    handle_report,
    on_node_connected,
    on_node_disconnected,
    on_nodes_lost,
    on_reports,
    resume_node,
)
from drover.controller.handlers.submit import submit
from drover.controller.lifecycle import fail_job
from drover.controller.node_channels import NodeChannel, NodeChannels
from drover.controller.pe_tasks import PeTasks
from drover.controller.relays import Relays
from drover.controller.samples import LiveSamples
from drover.controller.state import ControllerState
from drover.core.checkpoints import Environment as CheckpointEnvironment
from drover.core.errors import Conflict, DroverError, NotFound
from drover.core.exit_status import GRID_ENGINE, ExitSemantics
from drover.core.ids import job_of_attempt, parse_attempt_name, parse_job_ref
from drover.core.job import Attempt, Job
from drover.core.limits import Limits
from drover.core.node_state import NodeState
from drover.protocol.api import ActionResult, JobSubmission
from drover.protocol.node_channel import (
    ChunkKept,
    Exited,
    Heartbeat,
    Hello,
    NodeMessage,
    PeTaskExited,
    Progress,
    StagedChunk,
    StagedOut,
    StartPeTask,
    task_script,
)
from drover.records import PeTaskRecord
from drover.store.base import Changes, EventRecord, JobFilter, Store, SubmissionKey
from drover.store.faults import StoreFault

log = logging.getLogger("drover.controller")
# Request keys remembered: in memory, and in the store with their submissions (loaded by a
# controller that starts or takes over; the older ones are pruned with the hourly purge).
REMEMBERED_SUBMISSIONS = 10_000
UNSAVED_REPORTS = 10_000  # per node: reports kept while the store refuses them (the oldest go first)
REASON_CHARS = 1000  # of an internal error's reason, as kept with the job
PURGE_EVERY_S = 3600.0  # how often ended jobs older than history_days are looked for
PURGE_BATCH = 1000  # jobs forgotten in one transaction


@dataclass(frozen=True, slots=True)
class Settings:
    kill_grace_s: float = 10.0  # between the warning signal and SIGKILL when a job is stopped
    queues: Mapping[str, QueueSection] = field(default_factory=dict)  # [queues.NAME] of drover.toml
    files_dir: str = ""  # where staged-out files are kept until fetched
    smtp_host: str = "localhost"
    smtp_port: int = 25
    mail_tries: int = 5
    # What an attempt's end means: [controller] requeue_held, forbid_reschedule, forbid_apperror
    exits: ExitSemantics = GRID_ENGINE
    node_timeout_s: float = 300.0  # a node down this long has lost its running jobs (NODE_FAIL)
    limits: Limits = field(default_factory=Limits)  # what one request and one user may ask
    min_job_age_s: int = 300  # [compat]: how long the Slurm front ends still show an ended job
    heartbeat_s: float = 10.0  # how often nodes say they are there; silent for three, a node is DOWN
    scheduler: SchedulerSection = field(default_factory=SchedulerSection)  # priority weights, backfill
    licenses: Mapping[str, int] = field(default_factory=dict)  # [licenses]: the cluster's counters
    user_queues: bool = False  # users may make queues of their own
    history_days: int = 365  # ended jobs are forgotten after this many days (0: never)
    environments: Mapping[str, EnvironmentSection] = field(default_factory=dict)  # [environments.NAME]
    # [parallel_environments.NAME]: Grid Engine's parallel environments
    parallel_environments: Mapping[str, ParallelEnvironmentSection] = field(default_factory=dict)
    checkpoints: Mapping[str, CheckpointEnvironment] = field(default_factory=dict)  # [checkpoints.NAME]


class _Reloaded(Exception):
    """The working set was reloaded from the store while a group was handled: the group's
    outcome names what is gone, and is dropped."""


class _Redo(Exception):
    """The planner set aside a job that the reports before it changed: its group is put back
    whole, and its reports handled again, committed without the pass."""

    def __init__(self, faulted: set[int], jobs: set[int]) -> None:
        super().__init__()
        self.faulted = faulted
        self.jobs = jobs  # every job the pass changed, and those it set aside


@dataclass(slots=True)
class _Memory:
    """What a group's handlers change in memory beyond its jobs and nodes, as it was before."""

    usage: dict[str, tuple[float, float]]  # fair share: an attempt's usage is added when it ends
    lost: dict[str, str] = field(default_factory=dict)  # the attempts given up that its reports name


@dataclass(frozen=True, slots=True)
class Scope:
    """What a handler may change beyond what its outcome names. If the handler or its commit
    fails, this and what the outcome changed are put back as the store has them."""

    jobs: frozenset[int] = frozenset()  # the jobs it names
    next_job_id: int | None = None  # it adds jobs from this id on (a submission)
    nodes: frozenset[str] | None = None  # the nodes to put back; None: those its outcome changes
    # Its jobs are independent of each other (a node's reports, the planner's starts, a lost
    # node's attempts, a hello): a commit that fails for something one job's changes hold is
    # tried job by job, and that job failed. Such a handler changes a job only inside that job's
    # isolation (Outcome.fault), so an exception that escapes it changed no job. Otherwise (a
    # user's request) it is all or nothing.
    per_job: bool = False


class ControllerService:
    def __init__(self, store: Store, settings: Settings, clock: Callable[[], float] = time.time,
                 faults: Faults = NO_FAULTS) -> None:
        """`faults`: the fault-injection seam, for tests only (controller/faults.py)."""
        self.store = store
        self.settings = settings
        self.orders = OrderOptions(settings.kill_grace_s, settings.queues, settings.scheduler, settings.licenses,
                                   settings.exits, environments=settings.environments,
                                   parallel_environments=settings.parallel_environments,
                                   checkpoints=settings.checkpoints)
        self.usage = DecayedUsage(settings.scheduler.fairshare_half_life_s)  # kept across reloads
        self.clock = clock
        self.channels = NodeChannels()
        self.relays = Relays(self.channels)  # users' reads of output and terminals on nodes
        self.pe_tasks = PeTasks(self.channels, clock)  # tasks of running parallel jobs, watched till they end
        self.samples = LiveSamples()  # what running attempts use now (`drover top`); in memory only
        self.started_at = clock()
        self._waiters: dict[int, list[asyncio.Future[None]]] = {}
        self._submitted: OrderedDict[tuple[str, str], tuple[int, ...]] = OrderedDict()  # request keys
        self._schedule_requested = False  # a planner pass is asked for: run with this turn's group
        self._group_queued = False  # the group of this loop turn is due (`_group`)
        # Nodes' frames of reports handled at the end of this loop turn, in the order they came
        # (one node's frames in a row as one), and committed with the pass they ask for.
        self._frames: list[tuple[str, list[Report]]] = []
        self._grouping = False  # handling a group now: the handlers it runs (`_fail`) do not settle
        self._wake: tuple[asyncio.TimerHandle, float] | None = None  # the pass at a begin time
        self._new_events = asyncio.Event()
        self._reload_due = False  # the working set is not whole: reloaded from the store before anything
        # While a reload is due: whether memory is whole but for the jobs in doubt (changed, and
        # maybe not committed), so that reads may be answered from it without them.
        self._memory_intact = False
        self._in_doubt: set[int] = set()
        self._report_handler = faults.report_handler(handle_report)
        self._exit_after_submit = faults.exit_after_submit
        # Reports a node sends once (started, suspended, exiting, progress) that the store could
        # not take: tried again with the node's next frame, or on a timer (`_keep_unsaved`).
        self._unsaved: dict[str, list[Report]] = {}
        self._unsaved_retry: dict[str, tuple[asyncio.TimerHandle, float]] = {}
        self.event_logs = EventLogFiles(self.channels, self._event_log_refused,
                                        lambda job_id: store.job_payloads([job_id]).get(job_id))
        self.state = self._load()
        # A submission sent again after the controller that took it restarted or was replaced
        # gets the ids it got then: its key was committed with its jobs.
        for submission in store.recent_submissions(REMEMBERED_SUBMISSIONS):
            self._submitted[submission.owner, submission.key] = submission.job_ids
        recently = clock() - CATCH_UP_ENDED_WITHIN_S
        self.event_logs.catch_up(store, [*self.state.jobs.values(),
                                         *store.list_ended_jobs(JobFilter(ended_since=recently, limit=100_000))])

    def _load(self) -> ControllerState:
        state = ControllerState.from_working_set(self.store.load_working_set())
        state.usage = self.usage
        self.pe_tasks.load(state)  # the tasks of its attempts, as the store has them
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

    def _run(self, handler: Callable[[], Outcome], scope: Scope) -> Outcome:
        """Run `handler`, commit its changes, carry out its effects, and fail the jobs it set
        aside. A failure puts back what `scope` and the outcome name, as the store has them, and
        is raised; a store fault among the parts of a per-job commit is raised once what was
        committed has been carried out. The nodes' reports waiting for this turn's group are
        handled and committed first, so that handlers run in the order their causes came."""
        self.ready()
        self._settle()
        try:
            outcome = handler()
        except DroverError as refusal:
            if isinstance(refusal, StoreFault):  # a read of the store failed half way
                log.error("%s", refusal)
                self._put_back(scope, None)
            raise  # otherwise a refusal: handlers check everything before they change anything
        except Exception:
            log.exception("a handler failed; what it changed was restored from the store")
            self._put_back(scope, None)
            raise
        outcome.set_aside()
        set_aside = Scope(frozenset(fault.job_id for fault in outcome.faults), nodes=frozenset())
        if set_aside.jobs and not self._put_back(set_aside, None):  # their changes are dropped already
            raise RuntimeError("the working set was reloaded from the store; the handler's changes are dropped")
        try:
            store_fault = self._commit(outcome, scope)
        except StoreFault as fault:
            log.error("%s", fault)
            # Nothing was committed, so nothing is acknowledged: the jobs and nodes go back to
            # what the store holds, the controller keeps running, and the caller learns the
            # cause (503); a node sends its reports again.
            self._put_back(scope, outcome)
            raise
        except Exception:
            log.exception("a commit failed; what it changed was restored from the store")
            self._put_back(scope, outcome)
            raise
        self._carry_out(outcome)
        for job_fault in outcome.faults:
            self._fail(job_fault)
        if store_fault is not None:
            raise store_fault
        return outcome

    def _commit(self, outcome: Outcome, scope: Scope, touched: bool = False) -> StoreFault | None:
        """Commit the outcome's changes in one transaction. If that fails for something in the
        changes (not the store's own fault: a number too large for it, say) and the scope's jobs
        are independent, commit them job by job: a job whose part fails is set aside, to be
        failed; after a store fault the parts not yet committed are put back, and the fault is
        returned for the caller to raise. `touched`: the planner was told of the changes already."""
        changes = outcome.changes
        if not changes:
            return None
        if not touched:
            self.state.changed(changes)
        try:
            self.store.commit(changes)
        except StoreFault:
            raise
        except Exception:
            if not scope.per_job:
                raise
            log.exception("a commit failed; committing job by job to find whose changes the store refuses")
        else:
            if changes.events:
                self._events_committed(changes)
            return None
        common, parts = changes.by_job()
        if common:
            self.store.commit(common)  # what belongs to no job: if it fails, the whole commit did
            if common.events:
                self._events_committed(common)
        store_fault: StoreFault | None = None
        unrecorded: set[int] = set()
        faults = len(outcome.faults)
        for job_id, part in parts.items():
            if store_fault is None:
                try:
                    self.store.commit(part)
                except StoreFault as fault:
                    log.error("%s", fault)
                    store_fault = fault
                except Exception as error:
                    outcome.fault(job_id, error, "recording its changes")
                    continue
                else:
                    if part.events:
                        self._events_committed(part)
                    continue
            unrecorded.add(job_id)
        if unrecorded:
            outcome.drop_jobs(unrecorded)
        outcome.set_aside()
        put_back = unrecorded | {fault.job_id for fault in outcome.faults[faults:]}
        if put_back:
            self._put_back(Scope(frozenset(put_back), nodes=frozenset()), None)
        return store_fault

    def _put_back(self, scope: Scope, outcome: Outcome | None) -> bool:
        """Put back as the store has them the jobs and nodes `scope` names, and those `outcome`
        changed. Only if the working set still contradicts itself is it reloaded whole (and
        False returned)."""
        self.state.work.rebuild_all()  # whatever is put back, the planner builds its work again
        jobs, nodes = set(scope.jobs), set(scope.nodes or ())
        if outcome is not None:
            jobs |= outcome.changes.job_ids()
            if scope.nodes is None:
                nodes |= set(outcome.changes.nodes)
        intact = False  # whether memory is as it was, but for these jobs' uncommitted changes
        try:
            if self._restore(jobs, scope.next_job_id, nodes):
                return True
            log.error("the working set contradicts itself after jobs %s were restored from the store",
                      sorted(jobs))
        except StoreFault as error:
            intact = True  # _restore reads everything before it changes anything
            log.error("restoring jobs %s from the store failed: %s", sorted(jobs), error)
        except Exception:
            log.exception("restoring jobs %s from the store failed", sorted(jobs))
        log.error("reloading the working set from the store; every node is asked to say hello again")
        try:
            self.state = self._load()
        except Exception as error:
            # The store is away (a restart of its server): nothing is done from memory until the
            # store gives the whole working set again (`ready`, tried before every handler and
            # request). Reads are answered from memory meanwhile if it is whole but for the jobs
            # whose changes may not be committed (`ready_to_read`): those are not shown.
            log.error("reloading the working set failed (%s); it is reloaded once the store answers", error)
            self._memory_intact = intact and (self._memory_intact or not self._reload_due)
            if scope.next_job_id is not None:
                jobs |= set(range(scope.next_job_id, self.state.next_job_id))
            self._in_doubt |= jobs
            self._reload_due = True
            return False
        self._reconnect_nodes()
        return False

    def ready(self) -> None:
        """Raise a StoreFault while the working set is not whole: it could not be reloaded from
        the store after a failure, and the store still does not give it."""
        if not self._reload_due:
            return
        self.state = self._load()  # a StoreFault while the store is away
        self._reload_due, self._memory_intact, self._in_doubt = False, False, set()
        log.info("the working set is reloaded from the store; every node is asked to say hello again")
        self._reconnect_nodes()
        self.request_schedule()

    def ready_to_read(self) -> None:
        """Before a read: as `ready`, except that while the store is away a working set that is
        whole but for the jobs in doubt is read from memory as it is (`in_doubt` says which
        jobs a read leaves out: their last change may not have been committed)."""
        try:
            self.ready()
        except StoreFault:
            if not self._memory_intact:
                raise

    @property
    def in_doubt(self) -> Set[int]:
        """The jobs whose in-memory state may hold a change the store never took, while the
        working set waits to be reloaded: reads leave them out until it is."""
        return self._in_doubt if self._reload_due else frozenset()

    def _restore(self, job_ids: Iterable[int], next_job_id: int | None = None, nodes: Iterable[str] = ()) -> bool:
        """Put these jobs (and those added from `next_job_id` on) and nodes back as the store has
        them, and count again what each node holds; False if the working set still contradicts
        itself afterwards (then only a full reload will do). Everything is read from the store
        before anything in memory changes: a store that fails meanwhile (a StoreFault) leaves the
        working set as it was."""
        state = self.state
        queues = self.store.load_queues()  # a handful: always as stored
        ids = set(job_ids)
        if next_job_id is not None:
            ids.update(range(next_job_id, state.next_job_id))
        loaded: dict[int, tuple[Job | None, dict[tuple[int, int], Attempt]]] = {}
        for job_id in ids:
            stored = self.store.load_job(job_id)
            attempts: dict[tuple[int, int], Attempt] = {}
            if stored is not None and stored.ended_at is None and any(task.attempt for task in stored.tasks.values()):
                attempts = {(a.index, a.number): a for a in self.store.attempts_of(job_id)}
            loaded[job_id] = (stored, attempts)
        stored_nodes = self.store.load_nodes() if nodes else {}
        state.queues, state.queues_in_effect = queues, None
        if next_job_id is not None:
            state.next_job_id = next_job_id
        for job_id in ids:
            state.pending_reasons.pop(job_id, None)
            state.ended_states.pop(job_id, None)
            before = state.remove_job(job_id)
            terminals: dict[tuple[int, int], str] = {}  # interactive attempts' relays: kept in memory only
            for task in before.tasks.values() if before is not None else ():
                attempt = state.attempts.pop((job_id, task.index, task.attempt), None)
                if attempt is not None and attempt.pty_socket:
                    terminals[task.index, attempt.number] = attempt.pty_socket
            stored, attempts = loaded[job_id]
            if stored is None or stored.ended_at is not None:
                continue
            state.add_job(stored)
            for task in stored.tasks.values():
                found = attempts.get((task.index, task.attempt)) if task.attempt else None
                if found is not None:
                    found.pty_socket = terminals.get((task.index, task.attempt))
                    state.attempts[job_id, task.index, task.attempt] = found
        if nodes:
            for name in nodes:
                node, row = state.nodes.get(name), stored_nodes.get(name)
                if row is None:
                    state.nodes.pop(name, None)
                elif node is None:
                    state.nodes[name] = row
                else:
                    node.cpus, node.memory_mib, node.state, node.reason = row.cpus, row.memory_mib, row.state, row.reason
        state.recount_nodes()
        try:
            state.check_invariants()
        except AssertionError:
            return False
        return True

    def _fail(self, fault: JobFault) -> None:
        """A job whose handling raised, put back as the store has it: it fails, with the reason,
        in a transaction of its own, and the reports it came from are acknowledged with it."""
        error = fault.error
        reason = f"internal error while {fault.where}: {type(error).__name__}: {error}"
        if len(reason) > REASON_CHARS:
            reason = reason[:REASON_CHARS - 1] + "…"
        log.error("job %d: %s; the job fails, the other jobs go on", fault.job_id, reason,
                  exc_info=(type(error), error, error.__traceback__))

        def handler() -> Outcome:
            outcome = Outcome(reschedule=True)
            fail_job(self.state, outcome, fault.job_id, self.clock(), reason)
            outcome.effects.extend(fault.acks)
            return outcome

        try:
            self._run(handler, Scope(frozenset({fault.job_id})))
        except StoreFault:
            # The store refuses: the job stays as the store has it, and its reports are not
            # acknowledged. The node sends them again, and once the store takes changes again
            # they are handled again: the job goes on, or fails then.
            log.error("job %d could not be failed (the store refuses); it stays as the store has it", fault.job_id)
        except Exception:
            # Not even failing it works: it stays as the store has it. Its reports are
            # acknowledged all the same, so that a report that cannot be handled does not come
            # back for ever; the job's state says where it stopped (`drover cancel` ends it).
            log.exception("job %d could not be failed either; it stays as the store has it", fault.job_id)
            for ack in fault.acks:
                self.channels.send(ack.node, ack.message)

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
            if job is not None and job.spec.event_log:
                self.event_logs.append(job, events)

    def resume_node(self, name: str, queue: str | None = None) -> None:
        self._run(lambda: resume_node(self.state, name, self.clock(), queue), Scope(nodes=frozenset({name})))

    def drain_node(self, name: str, reason: str) -> None:
        self._run(lambda: drain_node(self.state, name, reason, self.clock()), Scope(nodes=frozenset({name})))

    # -- queues (controller/handlers/queues.py) -------------------------------------------------

    def switch_queue(self, name: str, action: str, reason: str, caller: Caller) -> None:
        self._run(lambda: queues.switch(self.state, self.settings.queues, name, action, reason, caller.user,
                                        caller.is_admin, self.clock()), Scope())

    def suspend_queue(self, name: str, node: str | None, reason: str, caller: Caller) -> None:
        """Suspend the queue's instance on `node`, or on every node (queue_suspension.py)."""
        self._run(lambda: queue_suspension.suspend(self.state, self.settings.queues, name, node, reason, caller.user,
                                                   caller.is_admin, self.clock()), Scope())

    def unsuspend_queue(self, name: str, node: str | None, caller: Caller) -> None:
        self._run(lambda: queue_suspension.unsuspend(self.state, self.settings.queues, name, node, caller.user,
                                                     caller.is_admin, self.clock()), Scope())

    def change_queue(self, name: str, settings: Mapping[str, str], caller: Caller) -> None:
        self._run(lambda: queues.change(self.state, self.settings.queues, name, settings, caller.user,
                                        caller.is_admin, self.clock()), Scope())

    def create_queue(self, name: str, settings: Mapping[str, str], caller: Caller) -> None:
        self._run(lambda: queues.create(self.state, self.settings.queues, name, settings, caller.user,
                                        caller.is_admin, self.settings.user_queues, self.clock()), Scope())

    def delete_queue(self, name: str, caller: Caller) -> None:
        self._run(lambda: queues.delete(self.state, self.settings.queues, name, caller.user, caller.is_admin,
                                        self.clock()), Scope())

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
        emptied: set[str] = set()
        for effect in outcome.effects:
            if isinstance(effect, SendToNode):
                self.channels.send(effect.node, effect.message)
                self.pe_tasks.stopping(effect.message)  # a stopped attempt's tasks stop with it
            elif isinstance(effect, SendMail):
                asyncio.get_running_loop().create_task(self._mail(effect))
            elif isinstance(effect, JobEnded):
                for waiter in self._waiters.pop(effect.job_id, []):
                    if not waiter.done():
                        waiter.set_result(None)
                if effect.queue and effect.queue not in emptied and self._mail_if_queue_finished(effect):
                    emptied.add(effect.queue)
        if self.pe_tasks.watched:
            self.pe_tasks.sweep(self.state)  # the tasks of an attempt that ended are stopped
        if outcome.reschedule:
            self.request_schedule()

    def _mail_if_queue_finished(self, ended: JobEnded) -> bool:
        """jobd's mailfinished ("mail should be sent when last job in queue finishes
        computation"): a queue with `mail_finished` that holds no job once `ended` has ended
        (its changes are committed) is mailed about, to its owner, else to the job's --mail-user,
        else to the job's owner. Only such queues pay for the look at the working set."""
        queue = queues.queues_in_effect(self.state, self.settings.queues).get(ended.queue)
        if queue is None or not queue.mail_finished:
            return False
        if any(job.spec.queue == ended.queue for job in self.state.jobs.values()):
            return False
        to = queue.owner or ended.mail_user or ended.owner
        subject = f"Drover queue {ended.queue}: its last job finished"
        body = (f"The last job of queue {ended.queue}, {ended.job_id} ({ended.name}) of {ended.owner}, "
                f"ended {ended.state}.\nThe queue holds no more jobs.\n")
        asyncio.get_running_loop().create_task(self._mail(SendMail(ended.job_id, to, subject, body)))
        return True

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
        self._run(lambda: Outcome(changes=changes), Scope())

    def _event_log_refused(self, job_id: int, path: str, why: str) -> None:
        """A job's event log cannot be written (the file, or the node, refused): kept with the job
        as an event, in a transaction of its own once the one that is being committed is done."""
        changes = Changes()
        changes.event(self.clock(), "event_log_failed", job_id, path=path, error=why)

        def record() -> None:
            try:
                self._run(lambda: Outcome(changes=changes), Scope())
            except Exception:
                pass  # logged; the job goes on without its event log

        asyncio.get_running_loop().call_soon(record)

    def _reconnect_nodes(self) -> None:
        """After a reload, make every node say hello again, so orders are rebuilt from the store."""
        asyncio.get_running_loop().create_task(self.channels.close_all())

    async def watch_nodes(self) -> None:
        """Every few seconds: a connected node silent for three heartbeats is disconnected (so it
        is DOWN), and nodes down for longer than node_timeout_s lose their jobs."""
        while True:
            await asyncio.sleep(min(max(self.settings.node_timeout_s / 4, 0.2), self.settings.heartbeat_s, 30))
            for name in self._silent_nodes(self.clock()):
                channel = self.channels.channel(name)
                if channel is None:
                    continue
                log.warning("node %s: silent for more than %.0fs (3 heartbeats); its channel is closed",
                            name, 3 * self.settings.heartbeat_s)
                self.node_disconnected(channel)
                await channel.close()
            try:
                self._run(lambda: on_nodes_lost(self.state, self.clock(), self.settings.node_timeout_s,
                                                self.settings.exits),
                          Scope(per_job=True))
            except StoreFault as fault:
                log.warning("checking for lost nodes: %s", fault)
            except Exception:
                log.exception("checking for lost nodes failed")

    async def purge_history(self, every_s: float = PURGE_EVERY_S) -> None:
        """Every `every_s` (first at start): forget jobs that ended more than history_days ago,
        PURGE_BATCH at a time, each batch its own transaction, the loop free between batches;
        and the request keys of all but the newest REMEMBERED_SUBMISSIONS submissions."""
        while True:
            self.prune_submissions()
            if self.settings.history_days > 0:
                await self.purge_once()
            await asyncio.sleep(every_s)

    def prune_submissions(self) -> int:
        """Forget the stored request keys this controller no longer remembers (it remembers the
        newest REMEMBERED_SUBMISSIONS); the number forgotten."""
        try:
            return self.store.prune_submissions(REMEMBERED_SUBMISSIONS)
        except Exception:
            log.exception("pruning the submissions' request keys failed; it is tried again later")
            return 0

    async def purge_once(self) -> int:
        """One round of purging (every batch due now); the number of jobs forgotten."""
        before = self.clock() - self.settings.history_days * 86400.0
        forgotten = 0
        while True:
            try:
                ids = self.store.purge_ended(before, PURGE_BATCH)
            except Exception:
                log.exception("purging the history failed; it is tried again later")
                return forgotten
            for job_id in ids:
                self.state.ended_states.pop(job_id, None)
                for directory in staged_files.attempt_dirs(self.settings.files_dir, job_id):
                    shutil.rmtree(directory, ignore_errors=True)
            forgotten += len(ids)
            if len(ids) < PURGE_BATCH:
                if forgotten:
                    log.info("history: %d jobs that ended before %s forgotten (history_days = %d)", forgotten,
                             time.strftime("%Y-%m-%d %H:%M", time.localtime(before)), self.settings.history_days)
                return forgotten
            await asyncio.sleep(0.05)  # other work runs between batches

    def request_schedule(self) -> None:
        """Plan once at the end of this loop turn, however many changes asked for it; the pass
        is committed with the reports handled then (`_group`)."""
        self._schedule_requested = True
        self._queue_group()

    def _queue_group(self) -> None:
        if not self._group_queued:
            self._group_queued = True
            asyncio.get_running_loop().call_soon(self._group)

    # -- group commit: the nodes' reports of a loop turn and the pass they ask for ------------

    def _group(self) -> None:
        """At the end of a loop turn: the nodes' frames of reports that came in it, then the
        planner's pass if anything asked for one, committed in one transaction."""
        self._group_queued = False
        plan, self._schedule_requested = self._schedule_requested, False
        try:
            self._handle_group(plan)
        except Exception:
            log.exception("handling the nodes' reports and planning failed")
        self._wake_for_begin_time()

    def _settle(self) -> None:
        """Before any other handler: the reports waiting for this turn's group are handled and
        committed now, in the order they came; the pass they ask for stays for the turn's end."""
        if self._frames and not self._grouping:
            try:
                self._handle_group(plan=False, may_plan=False)
            except Exception:
                log.exception("handling the nodes' reports failed")

    def _handle_group(self, plan: bool, may_plan: bool = True) -> None:
        """Handle the waiting frames of reports, in the order they came, then run a planner pass
        if `plan` or the reports ask for one (and `may_plan`; else it is asked for the turn's
        end); commit everything they changed in one transaction, and only then carry out what
        they ask (acknowledgements, orders, waiters woken, events published).

        The guarantees are those of each handler run on its own (`_run`): if the store refuses
        the commit, every job and node of the group is put back as the store has it and nothing
        of it is acknowledged (the nodes send their reports again; what they say once is kept
        and tried again, `_keep_unsaved`); a commit that fails for something one job's changes
        hold is tried job by job (`_commit`), and that job failed alone. A frame whose reports
        set a job aside ends its group: what it and the frames before it changed is committed
        and the job failed before the next frames are handled and the pass runs, as when each
        frame had a transaction of its own. The pass is never committed in part (its starts may
        take what a report freed): if a group with one is refused for something its changes
        hold, nothing of it was committed and all of it is put back; its frames are handled
        again, committed without the pass (job by job if need be), and the pass runs after."""
        try:
            self.ready()  # nothing is handled on a working set that is not whole
        except StoreFault as fault:  # the store is still away: the reports wait for it
            log.error("%s", fault)
            frames, self._frames = self._frames, []
            self._keep_unsaved_frames(frames)
            return
        self._grouping = True
        alone = False  # the frames are handled again, without the pass: a group with it was refused
        try:
            while self._frames or plan:
                group, named, frames = Outcome(), set[int](), list[tuple[str, list[Report]]]()
                memory = _Memory(self.state.usage.saved())
                may_pass, alone, with_pass = may_plan and not alone, False, False
                try:
                    while self._frames and not group.faults:
                        node, reports = self._frames.pop(0)
                        frames.append((node, reports))
                        self._handle_frame(group, named, memory, node, reports)
                    if group.reschedule:
                        group.reschedule = False
                        if may_plan:
                            plan = True
                        else:
                            self.request_schedule()
                    if plan and may_pass and not self._frames and not group.faults:
                        plan = self._schedule_requested = False  # this pass answers every call for one so far
                        with_pass = self._plan(group, named)
                except StoreFault as fault:  # a read of the store failed half way
                    log.error("%s", fault)
                    self._put_back(Scope(frozenset(named), per_job=True), group)
                    self._forget(memory)
                    self._keep_unsaved_frames(frames)
                    continue
                except _Reloaded:
                    log.error("the working set was reloaded from the store: nothing of the reports handled with "
                              "the failed ones is acknowledged (every node says hello again)")
                    continue
                except _Redo as redo:
                    # Put back as one: the pass's job, restored alone, could take again what the
                    # pass gave others.
                    log.error("the planner set aside job(s) %s, which reports of the same turn changed; the reports "
                              "are handled again, committed without the pass", sorted(redo.faulted))
                    self._put_back(Scope(frozenset(named | redo.jobs), per_job=True), group)
                    self._forget(memory)
                    alone = True
                else:
                    alone = self._commit_group(group, frozenset(named), frames, memory, with_pass)
                if alone:
                    self._frames[:0] = frames
                    plan = True
        finally:
            self._grouping = False
            if self._frames:  # left by an exception: the next turn takes them
                self._queue_group()

    def _handle_frame(self, group: Outcome, named: set[int], memory: _Memory, node: str,
                      reports: list[Report]) -> None:
        jobs = frozenset(job_id for report in reports if (job_id := job_of_attempt(report.attempt)) is not None)
        named |= jobs  # put back with the group if the store refuses it
        lost = self.state.lost_attempts
        if lost:  # what handling the reports forgets, should they be handled again
            memory.lost.update((report.attempt, lost[report.attempt]) for report in reports if report.attempt in lost)
        try:
            outcome = on_reports(self.state, node, reports, self.clock(), self.settings.exits,
                                 self._report_handler)
        except StoreFault:
            raise
        except Exception:
            # Not a job's fault (those are set aside one by one): the jobs the frame names are put
            # back as the store has them, with what earlier frames of the group did to them, and
            # none of it is acknowledged; the reports that need it come again.
            log.exception("handling a frame of reports of node %s failed; the jobs it names were restored "
                          "from the store", node)
            group.drop_jobs(jobs)
            if not self._put_back(Scope(jobs), None):
                raise _Reloaded from None
            return
        self.state.changed(outcome.changes)  # the planner builds again the work of what they touched
        self._merge(group, outcome)

    def _plan(self, group: Outcome, named: set[int]) -> bool:
        """A planner pass over the working set as the group left it, added to the group; True if
        it changed anything. `named`: the jobs the group's reports name."""
        # A pass builds the planner's view of every job with pending work, all of it alive until
        # the pass ends, then freed by reference counting. With the cyclic collector on, so many
        # objects are promoted to its oldest generation during the pass that they set off full
        # collections over the whole working set: with 30,000 jobs queued, 54 of them, 5 s of a
        # 33 s run (bench B8). Paused for the pass (it never awaits), they are not promoted.
        collecting = gc.isenabled()
        gc.disable()
        try:
            outcome = schedule(self.state, self.clock(), self.store, self.orders)
        except Exception as error:
            # A StoreFault ends the pass before it changes anything; anything else escaped the
            # planner's job-by-job isolation. The reports before it are committed all the same.
            if isinstance(error, StoreFault):
                log.error("scheduling failed: %s", error)
            else:
                log.exception("scheduling failed")
            if not self._put_back(Scope(per_job=True), None):
                raise _Reloaded from None
            return False
        finally:
            if collecting:
                gc.enable()
        if outcome.faults:
            faulted = {fault.job_id for fault in outcome.faults}
            if faulted & (named | group.changes.job_ids()):
                raise _Redo(faulted, faulted | outcome.changes.job_ids())
        self.state.changed(outcome.changes)
        self._merge(group, outcome)
        return bool(outcome.changes)

    def _merge(self, group: Outcome, outcome: Outcome) -> None:
        """Add a handler's outcome to the group; the jobs it set aside are put back as the store
        has them, with what the group did to them before."""
        set_aside = group.merge(outcome)
        if set_aside and not self._put_back(Scope(frozenset(set_aside), nodes=frozenset()), None):
            raise _Reloaded

    def _commit_group(self, group: Outcome, named: frozenset[int], frames: list[tuple[str, list[Report]]],
                      memory: _Memory, with_pass: bool) -> bool:
        """Commit the group, then carry out its effects and fail the jobs it set aside. True if
        it held a pass and was refused for something its changes hold: then nothing of it was
        committed, all of it is put back, and its frames are to be handled again without the
        pass."""
        whole = with_pass and bool(frames)  # all or nothing
        scope = Scope(named, per_job=not whole)
        try:
            store_fault = self._commit(group, scope, touched=True)
        except StoreFault as fault:
            log.error("%s", fault)
            self._put_back(scope, group)
            self._forget(memory)
            self._keep_unsaved_frames(frames)
            return False
        except Exception:
            if whole:
                log.exception("a commit of reports with the planner's pass failed; the reports are handled again, "
                              "committed without the pass")
            else:
                log.exception("a commit failed; what it changed was restored from the store")
            self._put_back(scope, group)
            self._forget(memory)
            return whole
        self._carry_out(group)
        for job_fault in group.faults:
            self._fail(job_fault)
        if store_fault is not None:
            self._keep_unsaved_frames(frames)
            return False
        for node in {node for node, _ in frames}:
            retry = self._unsaved_retry.pop(node, None)
            if retry is not None:
                retry[0].cancel()
        return False

    def _forget(self, memory: _Memory) -> None:
        """Undo what the group's handlers changed in memory beyond its jobs and nodes (a group
        that is not committed): its reports are handled again, as if for the first time."""
        self.state.usage.restore(memory.usage)
        self.state.lost_attempts.update(memory.lost)

    def _keep_unsaved_frames(self, frames: list[tuple[str, list[Report]]]) -> None:
        by_node: dict[str, list[Report]] = {}
        for node, reports in frames:
            by_node.setdefault(node, []).extend(reports)
        for node, reports in by_node.items():
            self._keep_unsaved(node, reports)

    def _wake_for_begin_time(self) -> None:
        """Plan again when the earliest begin time of a waiting job comes (sbatch --begin): the
        planner is pure and passes are run by changes, so nothing else would wake it then."""
        wake_at = self.state.wake_at
        if self._wake is not None and (wake_at is None or self._wake[1] != wake_at):
            self._wake[0].cancel()
            self._wake = None
        if wake_at is not None and self._wake is None:
            delay = max(wake_at - self.clock(), 0.0) + 0.01  # a little past it, so the job's time has come
            self._wake = (asyncio.get_running_loop().call_later(delay, self.request_schedule), wake_at)

    # -- commands from users ------------------------------------------------------------------

    def submit(self, jobs: list[JobSubmission], owner: str, request_key: str | None = None,
               submitted_from: str | None = None) -> list[int]:
        """`request_key`: the client's name for this submission; the same key from the same owner
        again gets the ids it got the first time (a retried request makes no second job).
        `submitted_from`: the address of the host it came from over TLS (None: this host), whose
        node writes the jobs' event logs when the controller cannot (EventLogFiles.node_for)."""
        if request_key is not None and (owner, request_key) in self._submitted:
            return list(self._submitted[owner, request_key])
        ids: list[int] = []
        event_log_node = self.event_logs.node_for(owner, submitted_from) if any(j.event_log for j in jobs) else None

        def handler() -> Outcome:
            now = self.clock()
            outcome, new_ids = submit(self.state, jobs, owner, now, self.store,
                                      queues.queues_in_effect(self.state, self.settings.queues),
                                      self.settings.limits, event_log_node, self.settings.licenses,
                                      environments=self.settings.environments,
                                      parallel_environments=self.settings.parallel_environments,
                                      checkpoints=self.settings.checkpoints)
            ids.extend(new_ids)
            if request_key is not None:  # committed with the jobs: known to any controller from then on
                outcome.changes.submissions.append(SubmissionKey(owner, request_key, tuple(new_ids), now))
            return outcome

        self._run(handler, Scope(next_job_id=self.state.next_job_id))
        if self._exit_after_submit:
            log.error("injected fault (%s): exiting with jobs %s committed, before answering", EXIT_AFTER_SUBMIT,
                      ids)
            os._exit(1)
        if request_key is not None:
            self._submitted[owner, request_key] = tuple(ids)
            while len(self._submitted) > REMEMBERED_SUBMISSIONS:
                self._submitted.popitem(last=False)
        return ids

    def act(self, action: str, refs: list[str], may_touch: MayTouch, signal_name: str | None = None,
            priority: int | None = None, by: str | None = None, queue: str | None = None) -> list[ActionResult]:
        """`may_touch`: the caller's permission, asked of each job the refs name; `by`: the caller;
        `queue`: where "alter" moves the jobs."""
        results: list[ActionResult] = []
        moved_to = queues.queue_named(self.state, self.settings.queues, queue) if queue is not None else None

        def handler() -> Outcome:
            outcome, found = act(self.state, action, refs, may_touch, self.clock(), self.store, signal_name,
                                 priority, by, moved_to)
            results.extend(found)
            return outcome

        self._run(handler, Scope(frozenset(_job_ids(refs)), self.state.next_job_id))
        return results

    def start_pe_task(self, policy: Policy, caller: Caller, job_id: int, index: int, host: str, argv: list[str],
                      cwd: str | None, env: Mapping[str, str] | None,
                      credential: str | None = None) -> tuple[Attempt, PeTaskRecord]:
        """A task of a running parallel job on one of its hosts (controller/pe_tasks.py), checked
        first; its record is committed with its attempt, then its node gets the master's order
        made the task's."""
        self._settle()  # the latest reports first: an attempt that just ended starts nothing
        job, attempt, environment = pe_tasks.check(self.state, self.orders.parallel_environments, policy, caller,
                                                   job_id, index, host)
        rooms = {name: (cpu_ids, memory) for name, cpu_ids, memory in attempt.rooms(job.resources.memory_mib)}
        payload = self.store.job_payloads([job_id]).get(job_id)  # the job's environment, for a task given none
        if payload is None:
            raise NotFound(f"the store holds no script for job {job_id}")
        master = start_order(job, payload, attempt, self.orders, queue_nice(self.state, job, self.orders),
                             queue_of(self.state, job, self.orders))

        def order(petask: str) -> StartPeTask:
            config = pe_tasks.task_order(master.config, host, rooms[host][0], rooms[host][1], petask, cwd, env,
                                           credential)
            return StartPeTask(attempt.name, petask, config, task_script(argv))

        started: list[PeTaskRecord] = []

        def handler() -> Outcome:
            outcome, record = self.pe_tasks.start(attempt, host, argv, environment, order)
            started.append(record)
            return outcome

        self._run(handler, Scope(jobs=frozenset({job_id})))
        return attempt, started[0]

    def pe_task(self, job_id: int, index: int, number: int, petask: str) -> tuple[Attempt, PeTaskRecord]:
        """A task a parallel job's attempt started (qrsh -inherit), from the working set while its
        job is there, else from the store."""
        attempt = self._attempt(job_id, index, number)
        if attempt is None:
            raise NotFound(f"job {job_id}.{index} has no attempt {number}")
        return attempt, pe_tasks.find(attempt, petask)

    def _attempt(self, job_id: int, index: int, number: int) -> Attempt | None:
        return self.state.attempts.get((job_id, index, number)) or next(
            (a for a in self.store.attempts_of(job_id) if (a.index, a.number) == (index, number)), None)

    def stop_pe_task(self, job_id: int, index: int, number: int, petask: str) -> PeTaskRecord:
        """Stop one task of a running parallel job (its caller was interrupted); the caller is
        checked as the job's owner first (api/pe_tasks.py)."""
        attempt, _ = self.pe_task(job_id, index, number, petask)
        return self.pe_tasks.stop_task(attempt, petask)

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
        """A failure here (the store refuses the hello) is raised: the channel closes, and the
        node connects and says hello again."""
        self._settle()  # what the node said on its previous channel comes first
        previous = self.channels.attach(channel)
        self._run(lambda: on_node_connected(self.state, hello, self.clock(), self.orders, self.store,
                                            self.settings.heartbeat_s),
                  Scope(nodes=frozenset({hello.node}), per_job=True))
        self.event_logs.node_connected(hello.node, self.store)  # the event logs it writes catch up
        # The orders for its tasks it missed while away, and the stops of tasks of ended attempts.
        self.pe_tasks.node_connected(self.state, hello.node, hello.pe_task_attempts)
        return previous

    def node_messages(self, node: str, messages: list[NodeMessage]) -> None:
        """A frame of reports from a node: handled at the end of this loop turn, with the other
        nodes' frames and the pass they ask for (`_handle_group`); anything else the node says
        is taken now. Nothing here closes the node's channel: a job whose reports cannot be
        handled is failed alone (`_fail`), and while the store refuses the frame, nothing of it
        is acknowledged. The node sends its final reports (exited) and files (staged_out) again
        until they are; what it says once (started, suspended, exiting, progress) is kept here
        and tried again (`_keep_unsaved`)."""
        self._heard(node, messages)
        self.relays.take(node, messages)  # answers to users' reads and their terminals
        for message in messages:
            if isinstance(message, PeTaskExited):  # the end of a parallel job's task
                self._pe_task_ended(node, message)
            elif isinstance(message, StagedChunk):  # answered at once: the node sends the next
                self.channels.send(node, self._chunk_kept(node, message))
            elif isinstance(message, Progress) and message.given_up and message.step == "stage_out":
                staged_files.forget_partial(self.settings.files_dir, message.attempt)
        self.event_logs.take(node, messages)  # answers to event log appends
        self.samples.take(node, messages)  # what its running attempts use, and which of them ended
        reports: list[Report] = [m for m in messages if isinstance(m, Report) and self._kept(m)]
        unsaved = self._unsaved.pop(node, None)
        if unsaved:
            reports = [*unsaved, *reports]
        if not reports:
            return
        # Handled and committed with the other frames of this loop turn and the pass they ask
        # for, in one transaction (`_group`).
        if self._frames and self._frames[-1][0] == node:
            self._frames[-1][1].extend(reports)
        else:
            self._frames.append((node, reports))
        self._queue_group()

    def _pe_task_ended(self, node: str, message: PeTaskExited) -> None:
        """A task's end, recorded with its attempt (pe_tasks.PeTasks.ended); an ended job's
        attempt is no longer in the working set, and is read from the store. A commit refused
        is not acknowledged: the node sends the report again when it reconnects."""
        try:
            job_id, index, number = parse_attempt_name(message.attempt)
        except ValueError:
            return

        def handler() -> Outcome:
            return self.pe_tasks.ended(self.state, self._attempt(job_id, index, number), node, message)

        try:
            self._run(handler, Scope(jobs=frozenset({job_id})))
        except DroverError as fault:
            log.error("the end of task %s of %s is not recorded yet: %s", message.petask, message.attempt, fault)

    def _keep_unsaved(self, node: str, reports: list[Report]) -> None:
        """Keep what the node will not send again, and try it again with back-off (0.5 s,
        doubling to 30 s) while the node stays connected; its next hello rebuilds the rest."""
        once: list[Report] = [report for report in reports if not isinstance(report, Exited | StagedOut)]
        if not once or self.channels.channel(node) is None:
            return
        if len(once) > UNSAVED_REPORTS:
            log.warning("node %s: %d reports the store refused are dropped (the oldest)", node,
                        len(once) - UNSAVED_REPORTS)
            once = once[-UNSAVED_REPORTS:]
        self._unsaved[node] = once
        previous = self._unsaved_retry.get(node)
        delay = min(previous[1] * 2, 30.0) if previous is not None else 0.5
        if previous is not None:
            previous[0].cancel()
        timer = asyncio.get_running_loop().call_later(delay, self._retry_unsaved, node)
        self._unsaved_retry[node] = (timer, delay)

    def _retry_unsaved(self, node: str) -> None:
        if node in self._unsaved:
            self.node_messages(node, [])

    def _heard(self, name: str, messages: list[NodeMessage]) -> None:
        """The node spoke: when, and from its last heartbeat how busy its host is. In memory only
        (a heartbeat costs no commit); `drover nodes` shows it."""
        node = self.state.nodes.get(name)
        if node is None:
            return
        node.heard_at = self.clock()
        for message in messages:
            if isinstance(message, Heartbeat):
                node.load, node.memory_free_mib = message.load, message.memory_free_mib

    def _silent_nodes(self, now: float) -> list[str]:
        """Connected nodes not heard for three heartbeats: a link cut without a word (no FIN, no
        RST) looks connected to TCP for minutes."""
        limit = 3 * self.settings.heartbeat_s
        return [name for name in self.channels.connected()
                if (node := self.state.nodes.get(name)) is not None and node.heard_at is not None
                and now - node.heard_at > limit]

    def _kept(self, message: NodeMessage) -> bool:
        """Staged-out files are on disk before they are acknowledged. Files that cannot be kept
        (the controller's disk is full, a chunk is missing) are not acknowledged: the node tries
        again, and after its stage_out_tries gives them up, in an event that says so; the job
        goes on."""
        if not isinstance(message, StagedOut):
            return True
        try:
            staged_files.keep(self.settings.files_dir, message)
            return True
        except (OSError, ValueError, staged_files.NotKept, NotFound) as error:  # NotFound: a name outside
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            log.error("cannot keep the files attempt %s staged out, in %s: %s", message.attempt[:100],
                      self.settings.files_dir, reason)
            return False

    def _chunk_kept(self, node: str, chunk: StagedChunk) -> ChunkKept:
        """A chunk of a staged-out file, written where its file is assembled. Only the node
        that ran the attempt sends its files."""
        attempt = self.state.attempt_by_name(chunk.attempt)
        if attempt is None or attempt.node != node:
            return ChunkKept(chunk.attempt, chunk.record, refused="not an attempt this node ran")
        try:
            return staged_files.keep_chunk(self.settings.files_dir, chunk, self.settings.limits.max_stage_out_bytes)
        except OSError as error:
            log.error("cannot keep a chunk of the files attempt %s staged out, in %s: %s", chunk.attempt,
                      self.settings.files_dir, error.strerror or error)
            return ChunkKept(chunk.attempt, chunk.record, error=f"the controller cannot keep it: {error.strerror or error}")

    def node_disconnected(self, channel: NodeChannel) -> None:
        self._settle()  # what it said before it went is handled (and acknowledged) first
        if not self.channels.detach(channel):
            return
        self.relays.node_gone(channel.node)
        self.samples.node_gone(channel.node)
        self.event_logs.node_gone(channel.node)
        self._unsaved.pop(channel.node, None)  # its next hello rebuilds what they said
        retry = self._unsaved_retry.pop(channel.node, None)
        if retry is not None:
            retry[0].cancel()
        try:
            # A node whose channel is gone is DOWN whatever the store holds: if the store
            # refuses that, the working set keeps it (nodes=nothing to put back); a restarted
            # controller starts every node DOWN.
            self._run(lambda: on_node_disconnected(self.state, channel.node, self.clock()), Scope(nodes=frozenset()))
        except Exception:
            pass  # logged

    def forget_node(self, name: str, forget_in_store: Callable[[], None]) -> None:
        """A node that left the cluster: refused while it runs attempts. `forget_in_store`
        removes it from the store (and revokes its certificates) before the working set forgets
        it and its channel is closed."""
        self._settle()
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

        self._run(handler, Scope(nodes=frozenset({name})))


def _job_ids(refs: list[str]) -> list[int]:
    """The jobs the refs name (a malformed ref names none: it is refused on its own)."""
    ids = []
    for ref in refs:
        try:
            ids.append(parse_job_ref(ref)[0])
        except DroverError:
            pass
    return ids
