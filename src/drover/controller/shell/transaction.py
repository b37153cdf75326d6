"""The controller's transaction shell: runs a handler, commits its outcome, then carries out its
effects; undoes a handler or a commit that fails.

Every state change reaches the store before any reply, order or notification leaves: one
transaction per handler (the nodes' reports of a loop turn are grouped into one by
controller/shell/report_group.py, with the same guarantees). If a handler or a commit fails half way, what it may
have changed is put back as the store has it, which holds only whole transactions: the jobs it
named (and the ones it was adding), the jobs and nodes its outcome changed; never the whole
working set, and no node's channel is closed for it. Only if the working set still contradicts
itself afterwards is it reloaded whole (and every node asked to say hello again).

Handlers that work through many jobs (a node's reports, the planner's starts, a lost node's
attempts, a node's hello) handle each job apart: an exception while handling one job sets that
job aside (Outcome.fault), and the shell puts it back as the store has it and fails it, with the
reason, in a transaction of its own (`fail`); the other jobs go on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Set
from dataclasses import dataclass

from drover.controller.effects import JobEnded, JobFault, Outcome, SendMail, SendToNode
from drover.controller.handlers.fairshare import DecayedUsage
from drover.controller.handlers.lifecycle import fail_job
from drover.controller.nodes.node_channels import NodeChannels
from drover.controller.nodes.pe_tasks import PeTasks
from drover.controller.state import ControllerState
from drover.controller.tallies import Tallies
from drover.controller.upkeep.event_log import EventLogFiles
from drover.core.errors import DroverError
from drover.core.job import Attempt, Job
from drover.core.node_state import NodeState
from drover.store.base import Changes, EventRecord, Store
from drover.store.faults import StoreFault

log = logging.getLogger("drover.controller")
REASON_CHARS = 1000  # of an internal error's reason, as kept with the job


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


def _nothing() -> None:
    pass


def _no_mail(message: SendMail) -> None:
    pass


def _not_mailed(ended: JobEnded) -> bool:
    return False


@dataclass(slots=True)
class Hooks:
    """What the shell asks of the rooms built around it (controller/service.py sets them)."""

    settle: Callable[[], None] = _nothing  # the nodes' reports waiting for this turn go first
    request_schedule: Callable[[], None] = _nothing  # a planner pass at the turn's end
    mail: Callable[[SendMail], None] = _no_mail  # sent in the background (controller/upkeep/mailer.py)
    # jobd's mailfinished: True if the queue the job ended in was mailed about as empty
    mail_if_queue_finished: Callable[[JobEnded], bool] = _not_mailed


class Shell:
    """The working set in memory (`state`) and the one way to change it: `run`."""

    def __init__(self, store: Store, clock: Callable[[], float], channels: NodeChannels, pe_tasks: PeTasks,
                 usage: DecayedUsage) -> None:
        self.store = store
        self.clock = clock
        self.channels = channels
        self.pe_tasks = pe_tasks
        self.usage = usage  # fair share: kept across reloads
        self.tallies = Tallies()  # what the metrics count: kept across reloads too
        self.hooks = Hooks()
        self.event_logs = EventLogFiles(channels, self._event_log_refused,
                                        lambda job_id: store.job_payloads([job_id]).get(job_id))
        self._waiters: dict[int, list[asyncio.Future[None]]] = {}
        self._new_events = asyncio.Event()
        self._polling = 0  # the long polls for events waiting now
        self._stopping: DroverError | None = None  # set once the controller stops serving
        self._reload_due = False  # the working set is not whole: reloaded from the store before anything
        # While a reload is due: whether memory is whole but for the jobs in doubt (changed, and
        # maybe not committed), so that reads may be answered from it without them.
        self._memory_intact = False
        self._in_doubt: set[int] = set()
        self.state = self.load()

    def load(self, before: ControllerState | None = None) -> ControllerState:
        """The working set as the store has it; `before`: the one it replaces (a reload), whose
        connected nodes' hellos said what the store does not hold."""
        state = ControllerState.from_working_set(self.store.load_working_set())
        state.usage, state.tallies = self.usage, self.tallies
        self.pe_tasks.load(state)  # the tasks of its attempts, as the store has them
        # No node is connected to a controller that just started; each says hello when it is.
        changes = Changes()
        connected = self.channels.connected()
        for node in state.nodes.values():
            if node.state not in (NodeState.DOWN, NodeState.ERROR) and node.name not in connected:
                node.state = NodeState.DOWN
                changes.node(node)
            said = before.nodes.get(node.name) if before is not None and node.name in connected else None
            if said is not None:  # facts of the node daemon still connected, not of the store: kept
                node.said_hello_as(said)
            # A controller that just started gives every node a full node_timeout_s to say hello.
            node.last_seen = self.clock()
        if changes:
            self._commit(changes)
        return state

    def find_attempt(self, job_id: int, index: int, number: int) -> Attempt | None:
        """An attempt from the working set while its job is there, else from the store."""
        return self.state.attempts.get((job_id, index, number)) or next(
            (a for a in self.store.attempts_of(job_id) if (a.index, a.number) == (index, number)), None)

    def ready(self) -> None:
        """Raise a StoreFault while the working set is not whole: it could not be reloaded from
        the store after a failure, and the store still does not give it."""
        if not self._reload_due:
            return
        self.state = self.load(self.state)  # a StoreFault while the store is away
        self._reload_due, self._memory_intact, self._in_doubt = False, False, set()
        log.info("the working set is reloaded from the store; every node is asked to say hello again")
        self.reconnect_nodes()
        self.hooks.request_schedule()

    def ready_to_read(self) -> None:
        """Before a read: as `ready`, except that while the store is away a working set that is
        whole but for the jobs in doubt is read from memory as it is (`in_doubt` says which
        jobs a read leaves out: their last change may not have been committed)."""
        try:
            self.ready()
        except StoreFault:
            if not self._memory_intact:
                raise

    def still_answering(self) -> None:
        """Before an API request: raise the reason if the controller has begun to stop."""
        if self._stopping is not None:
            raise self._stopping

    @property
    def stopping(self) -> DroverError | None:
        """Why the controller stops serving, once it has begun to (what `still_answering` raises)."""
        return self._stopping

    def stop_answering(self, why: DroverError) -> None:
        """The controller stops serving (shut down, or another one leads now): the requests that
        wait here (for a job's end, for new events) are answered at once with `why`, and so is
        any request still to come. Left waiting, they would be cut off by the server's own
        shutdown with an error that tells the client nothing; `why` tells it to ask again, of
        the active controller if there is one."""
        self._stopping = why
        for waiters in self._waiters.values():
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)
        self._new_events.set()

    @property
    def in_doubt(self) -> Set[int]:
        """The jobs whose in-memory state may hold a change the store never took, while the
        working set waits to be reloaded: reads leave them out until it is."""
        return self._in_doubt if self._reload_due else frozenset()

    def run(self, handler: Callable[[], Outcome], scope: Scope) -> Outcome:
        """Run `handler`, commit its changes, carry out its effects, and fail the jobs it set
        aside. A failure puts back what `scope` and the outcome name, as the store has them, and
        is raised; a store fault among the parts of a per-job commit is raised once what was
        committed has been carried out. The nodes' reports waiting for this turn's group are
        handled and committed first, so that handlers run in the order their causes came."""
        self.ready()
        self.hooks.settle()
        try:
            outcome = handler()
        except DroverError as refusal:
            if isinstance(refusal, StoreFault):  # a read of the store failed half way
                log.error("%s", refusal)
                self.put_back(scope, None)
            raise  # otherwise a refusal: handlers check everything before they change anything
        except Exception:
            log.exception("a handler failed; what it changed was restored from the store")
            self.put_back(scope, None)
            raise
        outcome.set_aside()
        set_aside = Scope(frozenset(fault.job_id for fault in outcome.faults), nodes=frozenset())
        if set_aside.jobs and not self.put_back(set_aside, None):  # their changes are dropped already
            raise RuntimeError("the working set was reloaded from the store; the handler's changes are dropped")
        try:
            store_fault = self.commit(outcome, scope)
        except StoreFault as fault:
            log.error("%s", fault)
            # Nothing was committed, so nothing is acknowledged: the jobs and nodes go back to
            # what the store holds, the controller keeps running, and the caller learns the
            # cause (503); a node sends its reports again.
            self.put_back(scope, outcome)
            raise
        except Exception:
            log.exception("a commit failed; what it changed was restored from the store")
            self.put_back(scope, outcome)
            raise
        self.carry_out(outcome)
        for job_fault in outcome.faults:
            self.fail(job_fault)
        if store_fault is not None:
            raise store_fault
        return outcome

    def record(self, changes: Changes) -> None:
        """Commit changes a handler did not make (what became of a mail), in a transaction of
        their own."""
        self.run(lambda: Outcome(changes=changes), Scope())

    def commit(self, outcome: Outcome, scope: Scope, touched: bool = False) -> StoreFault | None:
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
            self._commit(changes)
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
            self._commit(common)  # what belongs to no job: if it fails, the whole commit did
            if common.events:
                self._events_committed(common)
        store_fault: StoreFault | None = None
        unrecorded: set[int] = set()
        faults = len(outcome.faults)
        for job_id, part in parts.items():
            if store_fault is None:
                try:
                    self._commit(part)
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
            self.put_back(Scope(frozenset(put_back), nodes=frozenset()), None)
        return store_fault

    def _commit(self, changes: Changes) -> None:
        """One transaction of the store, counted and timed for the metrics."""
        started = time.perf_counter()
        try:
            self.store.commit(changes)
        except BaseException:
            self.tallies.commit_failures += 1
            raise
        self.tallies.committed(changes, time.perf_counter() - started)

    def put_back(self, scope: Scope, outcome: Outcome | None) -> bool:
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
            if self.restore(jobs, scope.next_job_id, nodes):
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
            self.state = self.load(self.state)
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
        self.reconnect_nodes()
        return False

    def restore(self, job_ids: Iterable[int], next_job_id: int | None = None, nodes: Iterable[str] = ()) -> bool:
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

    def fail(self, fault: JobFault) -> None:
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
            self.run(handler, Scope(frozenset({fault.job_id})))
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

    def carry_out(self, outcome: Outcome) -> None:
        emptied: set[str] = set()
        for effect in outcome.effects:
            if isinstance(effect, SendToNode):
                self.channels.send(effect.node, effect.message)
                self.pe_tasks.stopping(effect.message)  # a stopped attempt's tasks stop with it
            elif isinstance(effect, SendMail):
                self.hooks.mail(effect)
            elif isinstance(effect, JobEnded):
                for waiter in self._waiters.pop(effect.job_id, []):
                    if not waiter.done():
                        waiter.set_result(None)
                if effect.queue and effect.queue not in emptied and self.hooks.mail_if_queue_finished(effect):
                    emptied.add(effect.queue)
        if self.pe_tasks.watched:
            self.pe_tasks.sweep(self.state)  # the tasks of an attempt that ended are stopped
        if outcome.reschedule:
            self.hooks.request_schedule()

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

    def events_marker(self) -> asyncio.Event:
        """Set when the next events are committed. Taken before a read that runs off the loop,
        it also tells of a commit that happened while the read ran (no lost wake-up)."""
        return self._new_events

    async def wait_for_events(self, timeout_s: float, marker: asyncio.Event | None = None) -> None:
        """Return when new events are committed (since `marker` was taken), or after `timeout_s`."""
        self._polling += 1
        try:
            await asyncio.wait_for((marker or self._new_events).wait(), timeout_s)
        except TimeoutError:
            pass
        finally:
            self._polling -= 1
        self.still_answering()

    def requests_waiting(self) -> dict[str, int]:
        """The requests waiting here now: for a job's end (`drover wait`), for new events (a long
        poll). A stop answers each of them at once."""
        return {"job_end": sum(len(waiters) for waiters in self._waiters.values()), "events": self._polling}

    async def wait_for_end(self, job_id: int, timeout_s: float) -> bool:
        """True once the job has ended (at once if it had), False if `timeout_s` passed first."""
        if job_id not in self.state.jobs:
            return True
        self.still_answering()  # the request was let in, then the controller began to stop
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(job_id, []).append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout_s)
        except TimeoutError:
            return False
        finally:
            waiters = self._waiters.get(job_id)
            if waiters and waiter in waiters:
                waiters.remove(waiter)
        self.still_answering()
        return True

    def _event_log_refused(self, job_id: int, path: str, why: str) -> None:
        """A job's event log cannot be written (the file, or the node, refused): kept with the job
        as an event, in a transaction of its own once the one that is being committed is done."""
        changes = Changes()
        changes.event(self.clock(), "event_log_failed", job_id, path=path, error=why)

        def record() -> None:
            try:
                self.run(lambda: Outcome(changes=changes), Scope())
            except Exception:
                pass  # logged; the job goes on without its event log

        asyncio.get_running_loop().call_soon(record)

    def reconnect_nodes(self) -> None:
        """After a reload, make every node say hello again, so orders are rebuilt from the store."""
        asyncio.get_running_loop().create_task(self.channels.close_all())

