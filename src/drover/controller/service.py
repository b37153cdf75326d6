"""The controller's service: the rooms built and wired together, and the users' commands, each a
thin method over the shell. A newcomer reads the rooms in this order:

- controller/shell/transaction.py: runs a handler, commits its outcome, carries out its effects, undoes a failure;
- controller/shell/report_group.py: the nodes' reports of a loop turn and the planner's pass, one commit;
- controller/nodes/node_liveness.py: nodes that connect, speak, fall silent, leave;
- controller/upkeep/mailer.py, controller/upkeep/purges.py: the controller's own mail, and forgetting old history;
- controller/handlers/: the deciders the commands below call.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Set
from typing import TYPE_CHECKING

from drover.controller.effects import Outcome
from drover.controller.faults import EXIT_AFTER_SUBMIT, NO_FAULTS, Faults
from drover.controller.handlers import queue_suspension, queues
from drover.controller.handlers.actions import MayTouch, act
from drover.controller.handlers.dispatch import queue_nice, queue_of, start_order
from drover.controller.handlers.fairshare import DecayedUsage
from drover.controller.handlers.node_reports import drain_node, handle_report, resume_node
from drover.controller.handlers.submit import submit
from drover.controller.nodes import pe_tasks
from drover.controller.nodes.node_channels import NodeChannel, NodeChannels
from drover.controller.nodes.node_liveness import NodeLiveness
from drover.controller.nodes.pe_tasks import PeTasks
from drover.controller.nodes.relays import Relays
from drover.controller.nodes.samples import LiveSamples
from drover.controller.security.auth import Caller, Policy
from drover.controller.settings import Settings
from drover.controller.shell.report_group import ReportGroup
from drover.controller.shell.transaction import Scope, Shell
from drover.controller.state import ControllerState
from drover.controller.upkeep import purges
from drover.controller.upkeep.event_log import CATCH_UP_ENDED_WITHIN_S, EventLogFiles
from drover.controller.upkeep.mailer import Mailer
from drover.controller.upkeep.purges import Purges
from drover.core.errors import DroverError, NotFound
from drover.core.ids import parse_job_ref
from drover.core.job import Attempt
from drover.protocol.api import ActionResult, JobSubmission
from drover.protocol.node_channel import Hello, NodeMessage, StartPeTask, task_script
from drover.records import PeTaskRecord
from drover.store.base import JobFilter, Store, SubmissionKey

if TYPE_CHECKING:
    from drover.controller.allocations.allocator import Allocator

__all__ = ["ControllerService", "Settings"]

log = logging.getLogger("drover.controller")


class ControllerService:
    def __init__(self, store: Store, settings: Settings, clock: Callable[[], float] = time.time,
                 faults: Faults = NO_FAULTS) -> None:
        """`faults`: the fault-injection seam, for tests only (controller/faults.py)."""
        self.store = store
        self.settings = settings
        self.orders = settings.order_options()
        self.usage = DecayedUsage(settings.scheduler.fairshare_half_life_s)  # kept across reloads
        self.clock = clock
        self.channels = NodeChannels()
        self.pe_tasks = PeTasks(self.channels, clock)  # tasks of running parallel jobs, watched till they end
        self.started_at = clock()
        # Allocation queues (controller/allocations/): set by the daemon where nodes may join.
        self.allocator: Allocator | None = None
        self._submitted: OrderedDict[tuple[str, str], tuple[int, ...]] = OrderedDict()  # request keys
        self._exit_after_submit = faults.exit_after_submit
        self.shell = Shell(store, clock, self.channels, self.pe_tasks, self.usage)
        self.reports = ReportGroup(self.shell, self.orders, settings.exits, faults.report_handler(handle_report),
                                   lambda node: self.node_messages(node, []))
        self.nodes = NodeLiveness(self.shell, self.reports, self.orders, settings)
        self.mailer = Mailer(self.shell, settings)
        self.purges = Purges(self.shell, settings)
        hooks = self.shell.hooks
        hooks.settle, hooks.request_schedule = self.reports.settle, self.reports.request_schedule
        hooks.mail, hooks.mail_if_queue_finished = self.mailer.send, self.mailer.mail_if_queue_finished
        # A submission sent again after the controller that took it restarted or was replaced
        # gets the ids it got then: its key was committed with its jobs.
        for submission in store.recent_submissions(purges.REMEMBERED_SUBMISSIONS):
            self._submitted[submission.owner, submission.key] = submission.job_ids
        recently = clock() - CATCH_UP_ENDED_WITHIN_S
        self.event_logs.catch_up(store, [*self.state.jobs.values(),
                                         *store.list_ended_jobs(JobFilter(ended_since=recently, limit=100_000))])

    @property
    def state(self) -> ControllerState:
        """The working set (a reload after a failure replaces it: read it here each time)."""
        return self.shell.state

    @property
    def event_logs(self) -> EventLogFiles:
        return self.shell.event_logs

    @property
    def relays(self) -> Relays:
        return self.nodes.relays

    @property
    def samples(self) -> LiveSamples:
        return self.nodes.samples

    # -- the shell's and the rooms' doors, as the API and the daemon call them -------------------

    def ready(self) -> None:
        self.shell.still_answering()
        self.shell.ready()

    def ready_to_read(self) -> None:
        self.shell.still_answering()
        self.shell.ready_to_read()

    @property
    def in_doubt(self) -> Set[int]:
        return self.shell.in_doubt

    def events_marker(self) -> asyncio.Event:
        return self.shell.events_marker()

    async def wait_for_events(self, timeout_s: float, marker: asyncio.Event | None = None) -> None:
        await self.shell.wait_for_events(timeout_s, marker)

    async def wait_for_end(self, job_id: int, timeout_s: float) -> bool:
        return await self.shell.wait_for_end(job_id, timeout_s)

    def stop_answering(self, why: DroverError) -> None:
        self.shell.stop_answering(why)
        self.reports.release_held()  # what the nodes said is recorded before the loop ends

    @property
    def stopping(self) -> DroverError | None:
        return self.shell.stopping

    def request_schedule(self) -> None:
        self.reports.request_schedule()

    def node_connected(self, channel: NodeChannel, hello: Hello) -> NodeChannel | None:
        return self.nodes.node_connected(channel, hello)

    def node_messages(self, node: str, messages: list[NodeMessage]) -> None:
        self.nodes.node_messages(node, messages)

    def node_disconnected(self, channel: NodeChannel) -> None:
        self.nodes.node_disconnected(channel)

    def forget_node(self, name: str, forget_in_store: Callable[[], None]) -> None:
        self.nodes.forget_node(name, forget_in_store)

    async def watch_nodes(self) -> None:
        await self.nodes.watch_nodes()

    async def purge_history(self, every_s: float = purges.PURGE_EVERY_S) -> None:
        await self.purges.purge_history(every_s)

    def prune_submissions(self) -> int:
        return self.purges.prune_submissions()

    async def purge_once(self) -> int:
        return await self.purges.purge_once()

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

        self.shell.run(handler, Scope(next_job_id=self.state.next_job_id))
        if self._exit_after_submit:
            log.error("injected fault (%s): exiting with jobs %s committed, before answering", EXIT_AFTER_SUBMIT,
                      ids)
            os._exit(1)
        if request_key is not None:
            self._submitted[owner, request_key] = tuple(ids)
            while len(self._submitted) > purges.REMEMBERED_SUBMISSIONS:
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

        self.shell.run(handler, Scope(frozenset(_job_ids(refs)), self.state.next_job_id))
        return results

    def start_pe_task(self, policy: Policy, caller: Caller, job_id: int, index: int, host: str, argv: list[str],
                      cwd: str | None, env: Mapping[str, str] | None,
                      credential: str | None = None) -> tuple[Attempt, PeTaskRecord]:
        """A task of a running parallel job on one of its hosts (controller/nodes/pe_tasks.py), checked
        first; its record is committed with its attempt, then its node gets the master's order
        made the task's."""
        self.reports.settle()  # the latest reports first: an attempt that just ended starts nothing
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

        self.shell.run(handler, Scope(jobs=frozenset({job_id})))
        return attempt, started[0]

    def pe_task(self, job_id: int, index: int, number: int, petask: str) -> tuple[Attempt, PeTaskRecord]:
        """A task a parallel job's attempt started (qrsh -inherit), from the working set while its
        job is there, else from the store."""
        attempt = self.shell.find_attempt(job_id, index, number)
        if attempt is None:
            raise NotFound(f"job {job_id}.{index} has no attempt {number}")
        return attempt, pe_tasks.find(attempt, petask)

    def stop_pe_task(self, job_id: int, index: int, number: int, petask: str) -> PeTaskRecord:
        """Stop one task of a running parallel job (its caller was interrupted); the caller is
        checked as the job's owner first (api/pe_tasks.py)."""
        attempt, _ = self.pe_task(job_id, index, number, petask)
        return self.pe_tasks.stop_task(attempt, petask)

    def resume_node(self, name: str, queue: str | None = None) -> None:
        self.shell.run(lambda: resume_node(self.state, name, self.clock(), queue), Scope(nodes=frozenset({name})))

    def drain_node(self, name: str, reason: str) -> None:
        self.shell.run(lambda: drain_node(self.state, name, reason, self.clock()), Scope(nodes=frozenset({name})))

    # -- queues (controller/handlers/queues.py) -------------------------------------------------

    def switch_queue(self, name: str, action: str, reason: str, caller: Caller) -> None:
        self.shell.run(lambda: queues.switch(self.state, self.settings.queues, name, action, reason, caller.user,
                                             caller.is_admin, self.clock()), Scope())

    def suspend_queue(self, name: str, node: str | None, reason: str, caller: Caller) -> None:
        """Suspend the queue's instance on `node`, or on every node (queue_suspension.py)."""
        self.shell.run(lambda: queue_suspension.suspend(self.state, self.settings.queues, name, node, reason,
                                                        caller.user, caller.is_admin, self.clock()), Scope())

    def unsuspend_queue(self, name: str, node: str | None, caller: Caller) -> None:
        self.shell.run(lambda: queue_suspension.unsuspend(self.state, self.settings.queues, name, node, caller.user,
                                                          caller.is_admin, self.clock()), Scope())

    def change_queue(self, name: str, settings: Mapping[str, str], caller: Caller) -> None:
        self.shell.run(lambda: queues.change(self.state, self.settings.queues, name, settings, caller.user,
                                             caller.is_admin, self.clock()), Scope())

    def create_queue(self, name: str, settings: Mapping[str, str], caller: Caller) -> None:
        self.shell.run(lambda: queues.create(self.state, self.settings.queues, name, settings, caller.user,
                                             caller.is_admin, self.settings.user_queues, self.clock()), Scope())

    def delete_queue(self, name: str, caller: Caller) -> None:
        self.shell.run(lambda: queues.delete(self.state, self.settings.queues, name, caller.user, caller.is_admin,
                                             self.clock()), Scope())



def _job_ids(refs: list[str]) -> list[int]:
    """The jobs the refs name (a malformed ref names none: it is refused on its own)."""
    ids = []
    for ref in refs:
        try:
            ids.append(parse_job_ref(ref)[0])
        except DroverError:
            pass
    return ids
